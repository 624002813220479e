import Foundation
import Storage

/// The store's schema as both engines can describe it: tables with their columns and primary
/// keys, and indexes with their columns. Types are left out (INTEGER here is BIGINT there); what
/// a query relies on — names, nullability, keys, uniqueness, partial indexes — is compared.
/// Names are lowercased: PostgreSQL folds an unquoted `pref_stepWith` to `pref_stepwith`, and
/// the shared SQL names it either way.
public struct SchemaShape: Equatable, Sendable, CustomStringConvertible {
    public struct Column: Equatable, Sendable {
        public var name: String
        public var notNull: Bool
    }

    public struct Table: Equatable, Sendable {
        public var name: String
        /// By name: the two DDLs need not list columns in one order.
        public var columns: [Column]
        /// In key order.
        public var primaryKey: [String]
    }

    public struct Index: Equatable, Sendable, Comparable {
        /// Nil for an index a UNIQUE constraint made (each engine names those its own way).
        public var name: String?
        public var table: String
        public var columns: [String]
        public var unique: Bool
        public var partial: Bool

        public static func < (a: Index, b: Index) -> Bool {
            (a.table, a.name ?? "", a.columns.joined(separator: ",")) < (b.table, b.name ?? "", b.columns.joined(separator: ","))
        }
    }

    public var tables: [Table]
    public var indexes: [Index]

    public var description: String {
        let tableLines = tables.map { table in
            "\(table.name)(\(table.columns.map { $0.name + ($0.notNull ? "!" : "") }.joined(separator: ", "))) key (\(table.primaryKey.joined(separator: ", ")))"
        }
        let indexLines = indexes.map { index in
            "\(index.unique ? "unique " : "")index \(index.name ?? "(constraint)") on \(index.table)(\(index.columns.joined(separator: ", ")))\(index.partial ? " where …" : "")"
        }
        return (tableLines + indexLines).joined(separator: "\n")
    }
}

extension Store {
    /// This store's schema, read from its engine's catalogue.
    public func schemaShape() throws -> SchemaShape {
        switch db.engine {
        case .sqlite: return try sqliteShape()
        case .postgresql: return try postgresShape()
        }
    }

    private func sqliteShape() throws -> SchemaShape {
        let names = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name") { $0.string(0) }.sorted()
        var tables: [SchemaShape.Table] = []
        var indexes: [SchemaShape.Index] = []
        for name in names {
            let columns = try db.query("SELECT name, \"notnull\", pk FROM pragma_table_info('\(name)')") { row in
                (name: row.string(0), notNull: row.bool(1), key: row.int(2))
            }
            let key = columns.filter { $0.key > 0 }.sorted { $0.key < $1.key }.map { $0.name.lowercased() }
            let shaped = columns.map { SchemaShape.Column(name: $0.name.lowercased(), notNull: $0.notNull || $0.key > 0) }
            tables.append(SchemaShape.Table(name: name, columns: shaped.sorted { $0.name < $1.name }, primaryKey: key))
            let listed = try db.query("SELECT name, \"unique\", origin, partial FROM pragma_index_list('\(name)')") { row in
                (name: row.string(0), unique: row.bool(1), origin: row.string(2), partial: row.bool(3))
            }
            for index in listed where index.origin != "pk" {
                let indexed = try db.query("SELECT coalesce(name, '(expression)') FROM pragma_index_info('\(index.name)') ORDER BY seqno") {
                    $0.string(0).lowercased()
                }
                indexes.append(SchemaShape.Index(name: index.origin == "c" ? index.name : nil, table: name, columns: indexed,
                                                 unique: index.unique, partial: index.partial))
            }
        }
        return SchemaShape(tables: tables, indexes: indexes.sorted())
    }

    private func postgresShape() throws -> SchemaShape {
        let names = try db.query("""
            SELECT relname FROM pg_class
            WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND NOT relispartition
            ORDER BY relname
            """) { $0.string(0) }.sorted()
        var tables: [SchemaShape.Table] = []
        for name in names {
            let columns = try db.query("""
                SELECT attname, attnotnull FROM pg_attribute
                WHERE attrelid = 'public.\(name)'::regclass AND attnum > 0 AND NOT attisdropped
                ORDER BY attname
                """) { SchemaShape.Column(name: $0.string(0), notNull: $0.bool(1)) }.sorted { $0.name < $1.name }
            let key = try db.first("""
                SELECT array_to_string(ARRAY(
                    SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
                    JOIN pg_attribute AS a ON a.attrelid = x.indrelid AND a.attnum = k.attnum ORDER BY k.n), ',')
                FROM pg_index AS x WHERE x.indrelid = 'public.\(name)'::regclass AND x.indisprimary
                """) { $0.string(0) }
            tables.append(SchemaShape.Table(name: name, columns: columns,
                                            primaryKey: key.map { $0.split(separator: ",").map(String.init) } ?? []))
        }
        let indexes = try db.query("""
            SELECT i.relname, t.relname, x.indisunique, x.indpred IS NOT NULL,
                   EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conindid = x.indexrelid),
                   array_to_string(ARRAY(
                       SELECT coalesce(a.attname, '(expression)') FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
                       LEFT JOIN pg_attribute AS a ON a.attrelid = x.indrelid AND a.attnum = k.attnum AND k.attnum > 0
                       ORDER BY k.n), ',')
            FROM pg_index AS x
            JOIN pg_class AS i ON i.oid = x.indexrelid
            JOIN pg_class AS t ON t.oid = x.indrelid
            WHERE t.relnamespace = 'public'::regnamespace AND NOT t.relispartition AND NOT x.indisprimary
            """) { row in
            SchemaShape.Index(name: row.bool(4) ? nil : row.string(0), table: row.string(1),
                              columns: row.string(5).split(separator: ",").map(String.init),
                              unique: row.bool(2), partial: row.bool(3))
        }
        return SchemaShape(tables: tables, indexes: indexes.sorted())
    }
}
