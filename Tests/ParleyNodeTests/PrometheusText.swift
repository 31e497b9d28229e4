/// Reads samples out of a Prometheus text exposition (what `/metrics` answers), for assertions.
struct PrometheusText {
    let text: String

    /// The value of the sample named `name` whose labels include every pair of `labels`; nil when absent.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        values(name, labels).first
    }

    /// The values of every sample named `name` whose labels include every pair of `labels`.
    func values(_ name: String, _ labels: [String: String] = [:]) -> [Double] {
        text.split(separator: "\n").compactMap { line -> Double? in
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " ") else { return nil }
            let series = line[..<space]
            let sampleName = series.split(separator: "{", maxSplits: 1).first.map(String.init) ?? ""
            guard sampleName == name else { return nil }
            guard labels.allSatisfy({ series.contains("\($0.key)=\"\($0.value)\"") }) else { return nil }
            return Double(line[line.index(after: space)...])
        }
    }
}
