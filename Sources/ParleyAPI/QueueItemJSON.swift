/// Q1: one queue element, in requests (batch update) and answers.
struct QueueItemJSON: Codable, Sendable {
    var key: String
    var value: String
}
