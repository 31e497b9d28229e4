/// The answer to `sendMessage`.
public struct SendReceipt: Sendable, Hashable, Codable {
    public var seq: Int64
    public var time: Int64
    public var serverId: Int64
}
