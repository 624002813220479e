import CMicroHTTPD
import Foundation

// libmicrohttpd's C callbacks, as free functions outside main.swift (which would make them
// main-actor isolated, and libmicrohttpd calls them from its own threads).
//
// They borrow the server without retaining it: a callback that held the last reference when
// its owner let go would run the server's deinit — MHD_stop_daemon — on libmicrohttpd's own
// thread, which cannot join itself (libmicrohttpd aborts: "Failed to join a thread"). The owner
// releasing the server stops the daemon on its own thread, which waits for these callbacks.

/// Every call for a request: its headers, then its body in pieces, then the end.
func stepoAccessHandler(_ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                        _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ upload: UnsafePointer<CChar>?,
                        _ uploadSize: UnsafeMutablePointer<Int>?,
                        _ state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let context, let connection, let url, let method, let uploadSize, let state else { return .NO }
    return Unmanaged<HTTPServer>.fromOpaque(context)._withUnsafeGuaranteedRef { server in
        server.handle(connection, url: String(cString: url), method: String(cString: method), upload: upload,
                      uploadSize: uploadSize, state: state)
    }
}

/// A request is over (answered, or the connection closed): free its state, log it.
func stepoRequestCompleted(_ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                           _ state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                           _ reason: MHD_RequestTerminationCode) {
    guard let context, let state else { return }
    Unmanaged<HTTPServer>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.completed(connection, state.pointee) }
    state.pointee = nil
}

/// Collects a request's headers or query arguments into a ValuesBox.
func stepoCollectValue(_ context: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
                       _ value: UnsafePointer<CChar>?) -> MHD_Result {
    guard let context, let key else { return .YES }
    let box = Unmanaged<ValuesBox>.fromOpaque(context).takeUnretainedValue()
    let name = String(cString: key)
    // The shim left a "%2F" and a "%25" as written (see its unescaper): an argument's value is
    // decoded whole here.
    let text = value.map { String(cString: $0) } ?? ""
    // (Decoded only where there is an escape left: Foundation's decoding is not cheap.)
    box.values[name] = kind == .GET_ARGUMENT_KIND && text.utf8.contains(UInt8(ascii: "%")) ? (text.removingPercentEncoding ?? text) : text
    box.counts[name.lowercased(), default: 0] += 1
    return .YES
}

/// A connection started or ended: the guard counts it and watches its deadlines.
func stepoConnectionNotified(_ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                             _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                             _ code: MHD_ConnectionNotificationCode) {
    guard let context, let connection, let socketContext else { return }
    Unmanaged<HTTPServer>.fromOpaque(context)._withUnsafeGuaranteedRef { server in
        switch code {
        case .CONNECTION_NOTIFY_STARTED: server.connections.started(connection, context: socketContext)
        default: server.connections.closed(connection, context: socketContext)
        }
    }
}
