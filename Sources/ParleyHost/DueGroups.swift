/// The groups a ready cycle must look at, by their position in the host's group list: those stepped,
/// proposed to, ticked or woken since the last cycle, and those that had work in it (they may have more).
/// A node holds some 65 groups; asking each of them for a Ready on every cycle cost a tenth of a node's
/// time at one client, where a cycle has one group's work.
struct DueGroups {
    private var due: [Bool]
    private var list: [Int] = []

    init(count: Int) {
        due = Array(repeating: false, count: count)
    }

    mutating func mark(_ i: Int) {
        guard !due[i] else { return }
        due[i] = true
        list.append(i)
    }

    mutating func markAll() {
        for i in due.indices { mark(i) }
    }

    /// The marked groups in ascending order (the order of the host's list, as a full walk had), unmarked.
    mutating func take() -> [Int] {
        let taken = list.sorted()
        list.removeAll(keepingCapacity: true)
        for i in taken { due[i] = false }
        return taken
    }

    var isEmpty: Bool { list.isEmpty }
}
