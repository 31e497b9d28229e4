/// The checker's answer for a whole history.
public enum LinearizabilityVerdict: Hashable, Sendable {
    case linearizable
    /// No linearization exists for the operations on `key`. `longestPrefix` is the longest sequence of
    /// operations (in linearization order) the search could explain, and `operations` all the key's operations.
    case violation(key: RegisterKey, operations: [ClientOperation], longestPrefix: [ClientOperation])
    /// The search on `key` gave up after `steps` steps without an answer.
    case unknown(key: RegisterKey, steps: Int)

    /// A readable account, several lines for a violation.
    public var explanation: String {
        switch self {
        case .linearizable:
            return "linearizable"
        case .unknown(let key, let steps):
            return "unknown: search on key \(key) gave up after \(steps) steps"
        case .violation(let key, let operations, let prefix):
            var lines = ["not linearizable on key \(key): \(operations.count) operations, "
                + "at most \(prefix.count) can be put in a legal order"]
            lines.append("  longest legal order: " + prefix.map(\.description).joined(separator: "; "))
            let placed = Set(prefix)
            let rest = operations.filter { !placed.contains($0) }
            lines.append("  left over (first 10, by invocation): "
                + rest.prefix(10).map(\.description).joined(separator: "; "))
            return lines.joined(separator: "\n")
        }
    }
}

/// Wing–Gong / Lowe linearizability search with memoization of (linearized set, register state),
/// run separately for each key (a register history is linearizable iff each key's sub-history is:
/// P-compositionality). Unknown outcomes return at +∞, as in Porcupine.
public struct LinearizabilityChecker: Sendable {
    /// Upper bound on search steps per key before answering `.unknown` instead of running on.
    public var maxStepsPerKey: Int

    public init(maxStepsPerKey: Int = 2_000_000) {
        self.maxStepsPerKey = maxStepsPerKey
    }

    /// Checks a whole history, key by key in ascending key order; the first failing key decides.
    public func check(_ history: [ClientOperation]) -> LinearizabilityVerdict {
        var byKey: [RegisterKey: [ClientOperation]] = [:]
        for operation in history {
            // A read with no answer constrains nothing.
            if case .get = operation.input, operation.output == nil { continue }
            byKey[operation.input.key, default: []].append(operation)
        }
        var undecided: LinearizabilityVerdict?
        for key in byKey.keys.sorted() {
            let verdict = checkKey(key, Self.withoutUnseenPendingWrites(byKey[key]!))
            switch verdict {
            case .linearizable: continue
            case .violation: return verdict
            case .unknown: undecided = undecided ?? verdict
            }
        }
        return undecided ?? .linearizable
    }

    /// On a key with only puts and gets, a put with an unknown outcome whose value no get returned can
    /// always be linearized last, after everything (it returns at +∞), where it changes no answer: the
    /// history is linearizable with it iff without it. Dropping such puts keeps the search from trying
    /// every subset of them. (With cas on the key the argument fails, so such keys are left whole.)
    static func withoutUnseenPendingWrites(_ operations: [ClientOperation]) -> [ClientOperation] {
        var seen: Set<RegisterValue> = []
        for operation in operations {
            switch (operation.input, operation.output) {
            case (.cas, _): return operations
            case (.get, .value(let value?)?): seen.insert(value)
            default: break
            }
        }
        return operations.filter { operation in
            guard operation.output == nil, case .put(_, let value) = operation.input else { return true }
            return seen.contains(value)
        }
    }

    private func checkKey(_ key: RegisterKey, _ operations: [ClientOperation]) -> LinearizabilityVerdict {
        var search = RegisterSearch(operations)
        switch search.run(maxSteps: maxStepsPerKey) {
        case .some(true): return .linearizable
        case .some(false):
            return .violation(key: key, operations: operations,
                              longestPrefix: search.longestPrefix.map { operations[$0] })
        case .none: return .unknown(key: key, steps: search.steps)
        }
    }
}

/// One key's search: a doubly linked list of call and return events sorted by time (index 0 is the head);
/// calls are "lifted" out of the list when linearized and put back on backtracking.
private struct RegisterSearch {
    let operations: [ClientOperation]
    var next: [Int]
    var prev: [Int]
    /// For event e (1-based): the operation it belongs to, and whether it is the call.
    let operationOf: [Int]
    let isCall: [Bool]
    /// For a call event, its return event.
    let returnOf: [Int]
    var steps = 0
    var longestPrefix: [Int] = []

    init(_ operations: [ClientOperation]) {
        self.operations = operations
        struct Event { var time: UInt64; var isCall: Bool; var operation: Int }
        var events: [Event] = []
        for (index, operation) in operations.enumerated() {
            events.append(Event(time: operation.invokedAt, isCall: true, operation: index))
            events.append(Event(time: max(operation.effectiveReturn, operation.invokedAt), isCall: false,
                                operation: index))
        }
        // Equal times: calls first, so operations touching at an instant count as concurrent.
        events.sort { a, b in
            if a.time != b.time { return a.time < b.time }
            if a.isCall != b.isCall { return a.isCall }
            return a.operation < b.operation
        }
        let count = events.count
        next = Array(0...count).map { $0 + 1 }
        next[count] = -1
        prev = Array(0...count).map { $0 - 1 }
        operationOf = [-1] + events.map(\.operation)
        isCall = [false] + events.map(\.isCall)
        var returnOf = Array(repeating: -1, count: count + 1)
        var callEvent = Array(repeating: -1, count: operations.count)
        for (offset, event) in events.enumerated() where event.isCall { callEvent[event.operation] = offset + 1 }
        for (offset, event) in events.enumerated() where !event.isCall {
            returnOf[callEvent[event.operation]] = offset + 1
        }
        self.returnOf = returnOf
    }

    private struct Memo: Hashable {
        var linearized: [UInt64]
        var state: RegisterValue?
    }

    /// true: linearizable; false: not; nil: gave up after `maxSteps`.
    mutating func run(maxSteps: Int) -> Bool? {
        var linearized = [UInt64](repeating: 0, count: (operations.count + 63) / 64)
        var seen: Set<Memo> = []
        var stack: [(call: Int, state: RegisterValue?)] = []
        var state: RegisterValue? = nil
        var event = next[0]
        while next[0] != -1 {
            steps += 1
            if steps > maxSteps { return nil }
            if event == -1 { return false }
            if isCall[event] {
                let op = operationOf[event]
                let operation = operations[op]
                if let newState = RegisterModel.step(state, operation.input, operation.output) {
                    var candidate = linearized
                    candidate[op / 64] |= 1 << UInt64(op % 64)
                    if seen.insert(Memo(linearized: candidate, state: newState)).inserted {
                        stack.append((event, state))
                        state = newState
                        linearized = candidate
                        lift(event)
                        if stack.count > longestPrefix.count { longestPrefix = stack.map { operationOf[$0.call] } }
                        event = next[0]
                        continue
                    }
                }
                event = next[event]
            } else {
                // A return reached before its call was linearized: undo the last choice.
                guard let (call, previous) = stack.popLast() else { return false }
                let op = operationOf[call]
                linearized[op / 64] &= ~(1 << UInt64(op % 64))
                state = previous
                unlift(call)
                event = next[call]
            }
        }
        return true
    }

    private mutating func remove(_ e: Int) {
        next[prev[e]] = next[e]
        if next[e] != -1 { prev[next[e]] = prev[e] }
    }

    private mutating func reinsert(_ e: Int) {
        next[prev[e]] = e
        if next[e] != -1 { prev[next[e]] = e }
    }

    private mutating func lift(_ call: Int) {
        remove(call)
        remove(returnOf[call])
    }

    /// Reverse order of `lift`, so the saved neighbour links are valid again.
    private mutating func unlift(_ call: Int) {
        reinsert(returnOf[call])
        reinsert(call)
    }
}
