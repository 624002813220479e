import Notifications

/// How a cell is drawn: the theme maps these roles to colours and attributes.
public enum Role: String, CaseIterable, Sendable {
    case normal, title, header, footer, section, actor, body, time, dot, newRow, selected, dim, deleted, badge, status
}

/// One terminal cell: the character it shows (nil for the second half of a wide one), its role
/// (foreground and attributes), and the row's tint (a background under every cell of the row:
/// New's warmth, the selection), if any.
public struct Cell: Equatable, Sendable {
    public var character: Character?
    public var role: Role
    public var tint: Role?
    /// The hyperlink the cell belongs to (OSC 8), if any.
    public var link: String?

    public init(character: Character?, role: Role, tint: Role? = nil, link: String? = nil) {
        self.character = character
        self.role = role
        self.tint = tint
        self.link = link
    }
}

/// An off-screen grid of cells. Views draw into it; the terminal copies it out; tests read it.
public struct Grid: Equatable, Sendable {
    public let width: Int
    public let height: Int
    public private(set) var cells: [Cell]

    public init(width: Int, height: Int) {
        self.width = max(0, width)
        self.height = max(0, height)
        cells = Array(repeating: Cell(character: " ", role: .normal), count: self.width * self.height)
    }

    /// Writes `text` at (x, y) in `role`, made inert (controls become visible placeholders),
    /// never past `limit` cells nor the edge, never splitting a wide character. Returns the
    /// cells used.
    @discardableResult
    public mutating func put(_ text: String, x: Int, y: Int, role: Role, limit: Int? = nil, link: String? = nil) -> Int {
        guard y >= 0, y < height, x >= 0, x < width else { return 0 }
        let room = min(limit ?? width, width - x)
        var column = x
        for character in Preview.visible(text) {
            let w = TextWidth.cells(character)
            if w == 0 {
                // A combining mark left alone joins the previous cell's character.
                if column > x, let previous = cells[y * width + column - 1].character {
                    cells[y * width + column - 1].character = Character(String(previous) + String(character))
                }
                continue
            }
            guard column - x + w <= room else { break }
            let tint = cells[y * width + column].tint
            cells[y * width + column] = Cell(character: character, role: role, tint: tint, link: link)
            // The cells a wide character covers beyond its first are its own, empty.
            for extra in 1..<max(1, w) { cells[y * width + column + extra] = Cell(character: nil, role: role, tint: tint, link: link) }
            column += w
        }
        return column - x
    }

    /// Paints a whole row's role (a bar: header, footer) without changing its characters.
    public mutating func paint(row y: Int, role: Role) {
        guard y >= 0, y < height else { return }
        for x in 0..<width { cells[y * width + x].role = role }
    }

    /// Tints a whole row: every cell, text and gaps alike, takes `tint`'s background.
    public mutating func tint(row y: Int, _ tint: Role) {
        guard y >= 0, y < height else { return }
        for x in 0..<width { cells[y * width + x].tint = tint }
    }

    /// The grid as text, one line per row, trailing spaces kept: what a test reads.
    public var lines: [String] {
        (0..<height).map { y in
            String((0..<width).compactMap { cells[y * width + $0].character })
        }
    }
}
