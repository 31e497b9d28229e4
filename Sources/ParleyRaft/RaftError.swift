/// Why the core refused a request.
public enum RaftError: Error, Equatable, Sendable {
    /// The proposal was refused; `reason` says why (e.g. a configuration change is pending).
    case proposalDropped(reason: String)
    /// Appending the proposal would exceed `maxUncommittedEntriesSize`; retry once entries commit.
    case proposalsOverUncommittedCap
    /// Only the leader takes proposals; `leader` is the one this node knows of (0 = none).
    case notLeader(leader: NodeID)
    /// The leader is handing over leadership and takes no proposals until it is done.
    case transferInProgress
    /// This node is not a voter (a learner, or not in the configuration) and cannot campaign.
    case notVoter
    /// A configuration setting is out of range.
    case invalidConfig(String)
    /// A message addressed to another node was delivered here.
    case wrongRecipient(NodeID)
    /// A message is internally inconsistent (e.g. entries out of sequence); it was ignored.
    case malformedMessage(String)
    /// Storage answered with an error the core cannot work around.
    case storage(String)
}
