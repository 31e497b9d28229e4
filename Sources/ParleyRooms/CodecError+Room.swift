import ParleyWire

extension CodecError {
    /// The stable room error a malformed command maps to (unknown op vs. malformed payload).
    public var roomError: RoomError {
        switch self {
        case .badTag("RoomCommand", _): return RoomError(.unknownOperation, "unknown command tag")
        default: return RoomError(.malformedCommand, "malformed command: \(self)")
        }
    }
}
