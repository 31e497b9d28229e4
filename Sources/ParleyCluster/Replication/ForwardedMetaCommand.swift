import ParleyWire
import ParleyShardState
import ParleyPlacement

/// A meta command sent to the meta leader (`POST /rpc/v1/meta/propose`), with its request key, if any.
public struct ForwardedMetaCommand: Sendable, Hashable, BinaryCodable {
    public var command: MetaCommand
    public var requestKey: RequestKey?

    public init(command: MetaCommand, requestKey: RequestKey? = nil) {
        self.command = command
        self.requestKey = requestKey
    }

    public func encode(to w: inout ByteWriter) {
        w.write(command)
        if let requestKey { w.write(requestKey) }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        command = try r.read()
        requestKey = r.isAtEnd ? nil : try r.read(RequestKey.self)
    }
}
