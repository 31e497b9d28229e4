import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A WebSocket client on a plain blocking socket that sends what it is told and reads only when asked: with a
/// small receive buffer and no reads it is the client that stops reading (the bounded-outbox test).
/// Its reads block: call them through `offThePool`, so that two tests waiting at once do not hold both of a
/// 2-core machine's concurrency threads while the server's own tasks need one.
final class StalledClient: @unchecked Sendable {
    private let fd: Int32
    private var reset = false

    init(port: Int, receiveBuffer: Int32 = 4096) throws {
        fd = try Self.connected(port: port, receiveBuffer: receiveBuffer)
        try write(Array("GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n".utf8)
                  + Array("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
        // The 101 answer, byte by byte up to the blank line (frames may follow it).
        var head: [UInt8] = []
        while !head.suffix(4).elementsEqual("\r\n\r\n".utf8) {
            var byte: UInt8 = 0
            guard recv(fd, &byte, 1, 0) == 1 else { throw EdgeTestError.unexpected("no upgrade answer") }
            head.append(byte)
        }
        guard String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
            throw EdgeTestError.unexpected("upgrade refused: \(String(decoding: head, as: UTF8.self))")
        }
    }

    /// A plain HTTP connection that sends `bytes` and then nothing (a slow-loris client, SPEC A2).
    init(port: Int, sending bytes: [UInt8]) throws {
        fd = try Self.connected(port: port, receiveBuffer: 65_536)
        try write(bytes)
    }

    private static func connected(port: Int, receiveBuffer: Int32) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw EdgeTestError.unexpected("socket() failed") }
        var size = receiveBuffer
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw EdgeTestError.unexpected("connect() failed") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    deinit { if !reset { Glibc.close(fd) } }

    /// Aborts the connection: linger 0, so the close sends RST (a phone whose network vanished mid-write).
    func abort() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(fd)
        reset = true
    }

    /// Sends one masked text frame.
    func send(json object: [String: Any]) throws {
        try write(Self.maskedTextFrame(Array(try JSONSerialization.data(withJSONObject: object))))
    }

    /// A client's text frame (masked) holding `payload` (under 64 KiB).
    static func maskedTextFrame(_ payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame.append(0x80 | 126)
            frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return frame
    }

    /// Sends `bytes` as they are (a frame cut anywhere, say).
    func send(bytes: [UInt8]) throws {
        try write(bytes)
    }

    /// Half-closes: the client's end sends FIN (as a process that exits does), no WebSocket close frame.
    func halfClose() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Reads what has arrived, waiting until `text` is among it (throws if it never comes).
    func read(until text: String, timeout: Duration = .seconds(10)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { break }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                break
            }
            all += buffer[0..<n]
            if String(decoding: all, as: UTF8.self).contains(text) { return String(decoding: all, as: UTF8.self) }
        }
        throw EdgeTestError.timeout("never read \(text)")
    }

    /// Reads until the server ends the connection; returns what it sent (throws if it does not end in time).
    func readAllToEnd(timeout: Duration = .seconds(10)) throws -> String {
        String(decoding: try readBytesToEnd(timeout: timeout), as: UTF8.self)
    }

    /// Reads until the server ends the connection; returns the bytes it sent (throws if it does not end in time).
    func readBytesToEnd(timeout: Duration = .seconds(10)) throws -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return all }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                return all
            }
            all += buffer[0..<n]
        }
        throw EdgeTestError.timeout("the server kept the connection open")
    }

    /// Reads until the server ends the connection; returns the bytes read (throws if it does not end in time).
    func readToEnd(timeout: Duration = .seconds(10)) throws -> Int {
        let deadline = ContinuousClock.now + timeout
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while ContinuousClock.now < deadline {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return total }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                return total  // reset by the server: ended too
            }
            total += n
        }
        throw EdgeTestError.timeout("the server kept the stalled connection open")
    }

    private func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw EdgeTestError.unexpected("send() failed") }
            sent += n
        }
    }
}

/// Runs a blocking `body` on a thread of its own and waits for it without holding a concurrency thread.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
