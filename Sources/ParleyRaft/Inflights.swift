/// The append messages in flight to one peer: a ring of (last index, bytes) bounded by a message count
/// and optionally by bytes. Freed from the front as the peer acknowledges.
struct Inflights {
    private var ring: [(index: LogIndex, bytes: Int)]
    private var start = 0
    private(set) var count = 0
    private(set) var bytes = 0
    let capacity: Int
    let maxBytes: Int

    init(capacity: Int, maxBytes: Int) {
        self.capacity = capacity
        self.maxBytes = maxBytes
        ring = []
    }

    var isFull: Bool { count >= capacity || (maxBytes > 0 && bytes >= maxBytes) }

    mutating func add(index: LogIndex, bytes size: Int) {
        if ring.count < capacity { ring = Array(repeating: (0, 0), count: capacity) }
        ring[(start + count) % capacity] = (index, size)
        count += 1
        bytes += size
    }

    /// Frees every message whose last index is <= `index`.
    mutating func freeLE(_ index: LogIndex) {
        while count > 0 && ring[start].index <= index {
            bytes -= ring[start].bytes
            start = (start + 1) % capacity
            count -= 1
        }
        if count == 0 { start = 0 }
    }

    mutating func freeFirstOne() {
        guard count > 0 else { return }
        freeLE(ring[start].index)
    }

    mutating func reset() {
        start = 0
        count = 0
        bytes = 0
    }
}
