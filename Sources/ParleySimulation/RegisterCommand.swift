import ParleyWire

/// A client's write as it travels through the Raft log: who asked (for deduplication and the answer) and what.
struct RegisterCommand: Hashable, Sendable {
    var client: Int
    var request: UInt64
    var input: RegisterInput

    func encoded() -> [UInt8] {
        var writer = ByteWriter()
        writer.write(client)
        writer.write(request)
        switch input {
        case .put(let key, let value):
            writer.write(UInt8(1)); writer.write(key); writer.write(value)
        case .get(let key):
            writer.write(UInt8(2)); writer.write(key)
        case .cas(let key, let expected, let new):
            writer.write(UInt8(3)); writer.write(key); writer.write(optional: expected); writer.write(new)
        }
        return writer.bytes
    }

    init(client: Int, request: UInt64, input: RegisterInput) {
        self.client = client
        self.request = request
        self.input = input
    }

    init(decoding bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        client = try reader.readInt()
        request = try reader.readUInt64()
        switch try reader.readByte() {
        case 1: input = .put(key: try reader.readInt(), value: try reader.readInt())
        case 2: input = .get(key: try reader.readInt())
        case 3: input = .cas(key: try reader.readInt(), expected: try reader.readOptionalInt(), new: try reader.readInt())
        default: throw CodecError.badTag("RegisterCommand", 0)
        }
    }

    /// The ReadIndex context naming this request.
    static func readContext(client: Int, request: UInt64) -> [UInt8] {
        var writer = ByteWriter()
        writer.write(client)
        writer.write(request)
        return writer.bytes
    }

    static func decodeReadContext(_ bytes: [UInt8]) -> (client: Int, request: UInt64)? {
        var reader = ByteReader(bytes)
        guard let client = try? reader.readInt(), let request = try? reader.readUInt64(), reader.isAtEnd else { return nil }
        return (client, request)
    }
}

/// Each node's replicated key-value state: the registers plus, per client, the last request applied and
/// its answer, so a command that reaches the log twice takes effect once (Raft thesis §6.3).
struct RegisterStateMachine: Hashable, Sendable {
    private(set) var registers: [RegisterKey: RegisterValue] = [:]
    private var lastRequest: [Int: (request: UInt64, output: RegisterOutput)] = [:]

    init() {}

    static func == (lhs: RegisterStateMachine, rhs: RegisterStateMachine) -> Bool { lhs.encoded() == rhs.encoded() }
    func hash(into hasher: inout Hasher) { hasher.combine(encoded()) }

    /// Applies a committed command; returns the answer for its client.
    mutating func apply(_ command: RegisterCommand) -> RegisterOutput {
        if let last = lastRequest[command.client], last.request >= command.request {
            return last.output
        }
        let output: RegisterOutput
        switch command.input {
        case .put(let key, let value):
            registers[key] = value
            output = .written
        case .get(let key):
            output = .value(registers[key])
        case .cas(let key, let expected, let new):
            let swaps = registers[key] == expected
            if swaps { registers[key] = new }
            output = .swapped(swaps)
        }
        lastRequest[command.client] = (command.request, output)
        return output
    }

    func read(_ key: RegisterKey) -> RegisterValue? { registers[key] }

    /// Canonical bytes (sorted keys), used as snapshot data and for digests.
    func encoded() -> [UInt8] {
        var writer = ByteWriter()
        writer.write(registers.count)
        for key in registers.keys.sorted() {
            writer.write(key)
            writer.write(registers[key]!)
        }
        writer.write(lastRequest.count)
        for client in lastRequest.keys.sorted() {
            let last = lastRequest[client]!
            writer.write(client)
            writer.write(last.request)
            switch last.output {
            case .written: writer.write(UInt8(0)); writer.write(0)
            case .value(let value): writer.write(UInt8(1)); writer.write(optional: value)
            case .swapped(let done): writer.write(UInt8(2)); writer.write(done ? 1 : 0)
            }
        }
        return writer.bytes
    }

    init(decoding bytes: [UInt8]) throws {
        if bytes.isEmpty { return }
        var reader = ByteReader(bytes)
        for _ in 0..<(try reader.readInt()) {
            registers[try reader.readInt()] = try reader.readInt()
        }
        for _ in 0..<(try reader.readInt()) {
            let client = try reader.readInt()
            let request = try reader.readUInt64()
            let output: RegisterOutput
            switch try reader.readByte() {
            case 0: _ = try reader.readInt(); output = .written
            case 1: output = .value(try reader.readOptionalInt())
            default: output = .swapped(try reader.readInt() == 1)
            }
            lastRequest[client] = (request, output)
        }
    }

    var digest: UInt64 { StableDigest.of(encoded()) }
}
