/// One client operation as recorded by the simulator: when it was invoked, when (and whether) it returned.
public struct ClientOperation: Hashable, Sendable, CustomStringConvertible {
    /// The client that issued it (a client has at most one operation outstanding).
    public var client: Int
    public var input: RegisterInput
    /// `nil`: the outcome is unknown (the client timed out; the operation may or may not have taken effect).
    public var output: RegisterOutput?
    /// Virtual time of the invocation.
    public var invokedAt: UInt64
    /// Virtual time of the answer; `nil` (with `output == nil`) means it never returned, i.e. +∞.
    public var returnedAt: UInt64?

    public init(client: Int, input: RegisterInput, output: RegisterOutput?, invokedAt: UInt64, returnedAt: UInt64?) {
        self.client = client
        self.input = input
        self.output = output
        self.invokedAt = invokedAt
        self.returnedAt = returnedAt
    }

    /// A completed operation.
    public static func done(_ client: Int, _ input: RegisterInput, _ output: RegisterOutput,
                            _ invokedAt: UInt64, _ returnedAt: UInt64) -> ClientOperation {
        ClientOperation(client: client, input: input, output: output, invokedAt: invokedAt, returnedAt: returnedAt)
    }

    /// An operation whose client gave up waiting: it may take effect at any time after `invokedAt`.
    public static func pending(_ client: Int, _ input: RegisterInput, _ invokedAt: UInt64) -> ClientOperation {
        ClientOperation(client: client, input: input, output: nil, invokedAt: invokedAt, returnedAt: nil)
    }

    /// The return time used for ordering: an unknown outcome returns at +∞ (as in Porcupine).
    var effectiveReturn: UInt64 { output == nil ? UInt64.max : (returnedAt ?? UInt64.max) }

    public var description: String {
        let end = output == nil ? "∞" : String(returnedAt ?? UInt64.max)
        return "c\(client) \(input) → \(output.map(\.description) ?? "?") [\(invokedAt), \(end)]"
    }
}
