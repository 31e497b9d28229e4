@_exported import ParleyJSON
import ParleyRooms

/// The fields of one request, with typed accessors that fail with the offending field's name.
public struct RequestFields: Sendable {
    public let values: [String: JSONValue]

    public init(_ values: [String: JSONValue]) {
        self.values = values
    }

    /// The same fields with `roomId` (when it is a string) in the app's namespace (A8): the one place where
    /// a client's room id becomes the cluster's. An id that could name a namespace itself is refused.
    public func scopingRoomId(to namespace: String) throws(ProtocolError) -> RequestFields {
        guard case .string(let id)? = values["roomId"] else { return self }
        guard AppScope.isLocal(id) else { throw .badValue("roomId", "must not contain U+001F") }
        var scoped = values
        scoped["roomId"] = .string(AppScope.scoped(id, in: namespace))
        return RequestFields(scoped)
    }

    public func string(_ name: String) throws(ProtocolError) -> String {
        guard let v = values[name] else { throw .missingField(name) }
        guard case .string(let s) = v else { throw .wrongType(name, "string") }
        return s
    }

    public func string(_ name: String, default value: String) throws(ProtocolError) -> String {
        values[name] == nil || values[name] == .null ? value : try string(name)
    }

    public func optionalString(_ name: String) throws(ProtocolError) -> String? {
        values[name] == nil || values[name] == .null ? nil : try string(name)
    }

    public func int(_ name: String) throws(ProtocolError) -> Int64 {
        guard let v = values[name] else { throw .missingField(name) }
        guard case .int(let i) = v else { throw .wrongType(name, "int") }
        return i
    }

    public func int(_ name: String, default value: Int64) throws(ProtocolError) -> Int64 {
        values[name] == nil || values[name] == .null ? value : try int(name)
    }

    public func optionalInt(_ name: String) throws(ProtocolError) -> Int64? {
        values[name] == nil || values[name] == .null ? nil : try int(name)
    }

    /// A non-negative integer (seq numbers, durations, anchors).
    public func unsigned(_ name: String, default value: UInt64? = nil) throws(ProtocolError) -> UInt64 {
        let i: Int64
        if let value, values[name] == nil || values[name] == .null { return value } else { i = try int(name) }
        guard i >= 0 else { throw .wrongType(name, "non-negative int") }
        return UInt64(i)
    }

    public func bool(_ name: String) throws(ProtocolError) -> Bool {
        guard let v = values[name] else { throw .missingField(name) }
        guard case .bool(let b) = v else { throw .wrongType(name, "bool") }
        return b
    }

    public func bool(_ name: String, default value: Bool) throws(ProtocolError) -> Bool {
        values[name] == nil || values[name] == .null ? value : try bool(name)
    }

    public func strings(_ name: String) throws(ProtocolError) -> [String] {
        guard let v = values[name] else { throw .missingField(name) }
        guard case .array(let items) = v else { throw .wrongType(name, "[string]") }
        var out: [String] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .string(let s) = item else { throw .wrongType(name, "[string]") }
            out.append(s)
        }
        return out
    }

    /// An array of non-negative integers (sequences).
    public func unsignedArray(_ name: String) throws(ProtocolError) -> [UInt64] {
        guard let v = values[name] else { throw .missingField(name) }
        guard case .array(let items) = v else { throw .wrongType(name, "[int]") }
        var out: [UInt64] = []
        for item in items {
            guard case .int(let i) = item, i >= 0 else { throw .wrongType(name, "[non-negative int]") }
            out.append(UInt64(i))
        }
        return out
    }

    public func object(_ name: String) throws(ProtocolError) -> RequestFields {
        guard let v = values[name] else { throw .missingField(name) }
        guard case .object(let o) = v else { throw .wrongType(name, "object") }
        return RequestFields(o)
    }

    public func objects(_ name: String) throws(ProtocolError) -> [RequestFields] {
        guard let v = values[name] else { throw .missingField(name) }
        guard case .array(let items) = v else { throw .wrongType(name, "[object]") }
        var out: [RequestFields] = []
        for item in items {
            guard case .object(let o) = item else { throw .wrongType(name, "[object]") }
            out.append(RequestFields(o))
        }
        return out
    }
}
