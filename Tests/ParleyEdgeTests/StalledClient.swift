import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A WebSocket client on a plain blocking socket that sends what it is told and reads only when asked: with a
/// small receive buffer and no reads it is the client that stops reading (the bounded-outbox test).
/// Its reads block: call them through `offThePool` (ParleyTestSupport), so that two tests waiting at once do not hold both of a
/// 2-core machine's concurrency threads while the server's own tasks need one.
final class StalledClient: @unchecked Sendable {
    private let fd: Int32
    private var reset = false
    /// Bytes read but not yet a whole server frame (`readFrames`).
    private var unframed: [UInt8] = []

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
        while ContinuousClock.now < deadline, let chunk = receive(&buffer) {
            all += chunk
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

    /// Reads until a whole frame holding `text` has come; returns every whole text frame read (later bytes stay
    /// for the next call).
    func readFrames(until text: String, timeout: Duration = .seconds(10)) throws -> [String] {
        let deadline = ContinuousClock.now + timeout
        var frames: [String] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while ContinuousClock.now < deadline, let chunk = receive(&buffer) {
            unframed += chunk
            let (whole, used) = Self.frames(in: unframed)
            unframed.removeFirst(used)
            frames += whole
            if whole.contains(where: { $0.contains(text) }) { return frames }
        }
        throw EdgeTestError.timeout("never read \(text)")
    }

    /// One `recv`: its bytes, none when the wait ran out or a signal came, nil at the end of the connection or
    /// on an error.
    private func receive(_ buffer: inout [UInt8]) -> ArraySlice<UInt8>? {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n > 0 { return buffer[0..<n] }
        if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return [] }
        return nil
    }

    /// Reads whole text frames until none came for `quiet`.
    func readFrames(quietFor quiet: Duration) throws -> [String] {
        var wait = timeval(tv_sec: 0, tv_usec: Int(quiet / .microseconds(1)))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var frames: [String] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            unframed += buffer[0..<n]
            let (whole, used) = Self.frames(in: unframed)
            unframed.removeFirst(used)
            frames += whole
        }
        return frames
    }

    /// The text frames a server wrote (unmasked), in order, from `bytes` (a cut frame at the end is left out).
    static func serverFrames(_ bytes: [UInt8]) -> [String] { frames(in: bytes).texts }

    /// The close code of the server's close frame among `bytes`, if one came.
    static func closeCode(_ bytes: [UInt8]) -> Int? {
        var at = 0
        while let (opcode, payload, next) = frame(in: bytes, at: at) {
            if opcode == 8, payload.count >= 2 { return Int(payload[0]) << 8 | Int(payload[1]) }
            at = next
        }
        return nil
    }

    private static func frames(in bytes: [UInt8]) -> (texts: [String], used: Int) {
        var at = 0
        var texts: [String] = []
        while let (opcode, payload, next) = frame(in: bytes, at: at) {
            if opcode == 1 { texts.append(String(decoding: payload, as: UTF8.self)) }
            at = next
        }
        return (texts, at)
    }

    /// One whole unmasked frame starting at `at`: its opcode, payload and where the next begins.
    private static func frame(in b: [UInt8], at: Int) -> (UInt8, ArraySlice<UInt8>, Int)? {
        guard b.count >= at + 2 else { return nil }
        var length = Int(b[at + 1] & 0x7F)
        var start = at + 2
        if length == 126 {
            guard b.count >= at + 4 else { return nil }
            length = Int(b[at + 2]) << 8 | Int(b[at + 3])
            start = at + 4
        } else if length == 127 {
            guard b.count >= at + 10 else { return nil }
            length = (0..<8).reduce(0) { $0 << 8 | Int(b[at + 2 + $1]) }
            start = at + 10
        }
        guard b.count >= start + length else { return nil }
        return (b[at] & 0x0F, b[start..<(start + length)], start + length)
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

