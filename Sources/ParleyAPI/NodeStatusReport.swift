/// What `GET /status` answers: the node, its peers and every shard replica it holds.
public struct NodeStatusReport: Codable, Sendable, Equatable {
    public struct Peer: Codable, Sendable, Equatable {
        public var id: UInt64
        public var address: String
        /// Connected, with the peer's acceptance of this node's Raft stream.
        public var connected: Bool
        public var queuedBatches: Int
        public var droppedBatches: Int
        /// Failed connection attempts and refused streams since this node started.
        public var connectFailures: Int
        /// Why the link last failed or dropped (absent if it never did), and how long ago.
        public var lastError: String?
        public var lastErrorSecondsAgo: Double?
        /// 0 while connected; seconds since the link was last connected; absent if it never was.
        public var lastConnectedSecondsAgo: Double?
        /// The peer protocol version the peer last answered with (issue 18; absent: never reached).
        public var protocolVersion: Int?
        /// Issue 35: the links this node's client loops opened to the peer to send commands straight to the
        /// shards it leads (absent while none was needed).
        public var edgeLinks: EdgeLinks?

        public struct EdgeLinks: Codable, Sendable, Equatable {
            /// Links made (one per client loop that sent a command there) and how many are up.
            public var links: Int
            public var connected: Int
            /// Failed connection attempts over all of them since this node started.
            public var connectFailures: Int
            /// Why one of them last failed or dropped, and how long ago (absent if none did).
            public var lastError: String?
            public var lastErrorSecondsAgo: Double?

            public init(links: Int, connected: Int, connectFailures: Int, lastError: String?, lastErrorSecondsAgo: Double?) {
                self.links = links
                self.connected = connected
                self.connectFailures = connectFailures
                self.lastError = lastError
                self.lastErrorSecondsAgo = lastErrorSecondsAgo
            }
        }

        public init(id: UInt64, address: String, connected: Bool, queuedBatches: Int, droppedBatches: Int,
                    connectFailures: Int = 0, lastError: String? = nil, lastErrorSecondsAgo: Double? = nil,
                    lastConnectedSecondsAgo: Double? = nil, protocolVersion: Int? = nil) {
            self.protocolVersion = protocolVersion
            self.id = id
            self.address = address
            self.connected = connected
            self.queuedBatches = queuedBatches
            self.droppedBatches = droppedBatches
            self.connectFailures = connectFailures
            self.lastError = lastError
            self.lastErrorSecondsAgo = lastErrorSecondsAgo
            self.lastConnectedSecondsAgo = lastConnectedSecondsAgo
        }
    }

    public struct Shard: Codable, Sendable, Equatable {
        public var shard: Int
        public var role: String
        public var term: UInt64
        public var leader: UInt64
        public var commit: UInt64
        public var applied: UInt64
        /// Entries held in the log (last − first + 1).
        public var logSize: UInt64
        public var lastSnapshot: UInt64
        public var rooms: Int
        public var quiesced: Bool
        /// Hash of the shard's rooms state, present when asked for with `?digest=true`.
        public var digest: String?
        /// Issue 17: the group's voters and learners as this replica applied them; a learner, or `joint`, means
        /// a replica move is under way (absent in reports of older nodes).
        public var voters: [UInt64]?
        public var learners: [UInt64]?
        public var joint: Bool?
        /// Issue 19: IM effects of this shard not yet confirmed by their targets (the relay's backlog: it
        /// should stay near 0; growing means a target shard has no reachable leader), and the users and teams
        /// with IM state here (absent in reports of older nodes).
        public var imPending: Int?
        public var imUsers: Int?
        public var imTeams: Int?

        public init(shard: Int, role: String, term: UInt64, leader: UInt64, commit: UInt64, applied: UInt64,
                    logSize: UInt64, lastSnapshot: UInt64, rooms: Int, quiesced: Bool, digest: String?,
                    voters: [UInt64]? = nil, learners: [UInt64]? = nil, joint: Bool? = nil,
                    imPending: Int? = nil, imUsers: Int? = nil, imTeams: Int? = nil) {
            self.imPending = imPending
            self.imUsers = imUsers
            self.imTeams = imTeams
            self.voters = voters
            self.learners = learners
            self.joint = joint
            self.shard = shard
            self.role = role
            self.term = term
            self.leader = leader
            self.commit = commit
            self.applied = applied
            self.logSize = logSize
            self.lastSnapshot = lastSnapshot
            self.rooms = rooms
            self.quiesced = quiesced
            self.digest = digest
        }
    }

    /// The meta group as this node sees it.
    public struct Meta: Codable, Sendable, Equatable {
        public struct Node: Codable, Sendable, Equatable {
            public var id: UInt64
            public var peerAddress: String
            public var httpAddress: String
            public var state: String

            public init(id: UInt64, peerAddress: String, httpAddress: String, state: String) {
                self.id = id
                self.peerAddress = peerAddress
                self.httpAddress = httpAddress
                self.state = state
            }
        }

        /// The meta leader this node knows of (nil when it holds no meta replica).
        public var leader: UInt64?
        public var placementVersion: UInt64
        public var nodes: [Node]
        public var apps: Int

        public init(leader: UInt64?, placementVersion: UInt64, nodes: [Node], apps: Int) {
            self.leader = leader
            self.placementVersion = placementVersion
            self.nodes = nodes
            self.apps = apps
        }
    }

    public var node: UInt64
    public var version: String
    /// The peer protocol version this node speaks (issue 18, `PeerProtocol`).
    public var peerProtocol: Int?
    public var uptimeSeconds: Double
    public var httpAddress: String
    public var peerAddress: String
    /// Whether the peer port speaks mutual TLS (`--peer-tls-*`); false: cleartext h2, for one host or a
    /// private network only (docs/operations.md, Security).
    public var peerEncrypted: Bool
    /// SPEC T1: whether the client port speaks TLS itself (`--tls-cert`; HTTPS and WSS). Nil from a node
    /// older than this field.
    public var clientEncrypted: Bool?
    /// Issue 35: the event loops this node's Raft groups run on (`--raft-loops`; shard s on loop s % N). Nil
    /// from a node older than this field, which ran them on one.
    public var raftLoops: Int?
    /// The `malloc` the node allocates with ("jemalloc 5.3.0-…" or "glibc 2.36"; docs/operations.md, "Memory
    /// allocator"). Nil from a node older than this field.
    public var allocator: String?
    public var shardCount: Int
    public var healthy: Bool
    public var peers: [Peer]
    public var shards: [Shard]
    /// Nil when no meta replica could be reached.
    public var meta: Meta?
    /// This node's client edge (nil for a report made without one).
    public var edge: Edge?
    /// Issue 17: the replica moves under way in the groups this node leads.
    public var moves: [Move]?
    /// Issue 18: the last minutes of this node's activity, oldest first, one sample every
    /// `activityIntervalSeconds` (the dashboard's charts).
    public var activity: [Activity]?
    /// SPEC W5: the pre-send checks (W3) this node made for each app since it started (absent: none, or a node
    /// older than this field). Only a shard's leader calls, so the cluster's totals are the sum over nodes.
    public var webhooks: [Webhooks]?
    /// SPEC D1: what this node holds in memory against its bounds (nil from a node older than this field).
    public var memory: Memory?
    public static let activityIntervalSeconds = 2

    /// SPEC D1: bytes held in memory, by part, beside the bound of each (docs/operations.md, "Memory"). The
    /// figures are estimates from the data's sizes (strings' bytes and a fixed part per item), not the
    /// allocator's; `rssBytes` is the process's resident memory as the kernel counts it.
    public struct Memory: Codable, Sendable, Equatable {
        /// Raft log entries held by every shard replica, and the node's bound on them.
        public var raftLogBytes: Int
        public var raftLogBoundBytes: Int
        /// Recent events for the edges' feeds, over all replicas, and the bound of each replica's.
        public var feedBytes: Int
        public var feedBoundBytesPerShard: Int
        /// The rooms' recent-history windows over all replicas, and the bound of each shard's (0: none).
        public var historyWindowBytes: Int
        public var historyWindowBoundBytesPerShard: Int
        /// The shards whose replicated window bound is the node's (a shard's leader sets it once every node
        /// reads it; until then the windows keep only their per-room count).
        public var shardsWithWindowBound: Int
        /// Issue 38 item 5: the IM logs' items in memory over all replicas, the bound of each shard's, and the
        /// shards whose replicated bound is the node's.
        public var imLogWindowBytes: Int?
        public var imLogWindowBoundBytesPerShard: Int?
        public var shardsWithImLogWindowBound: Int?
        public var rssBytes: Int?

        public init(raftLogBytes: Int, raftLogBoundBytes: Int, feedBytes: Int, feedBoundBytesPerShard: Int,
                    historyWindowBytes: Int, historyWindowBoundBytesPerShard: Int, shardsWithWindowBound: Int,
                    rssBytes: Int?) {
            self.raftLogBytes = raftLogBytes
            self.raftLogBoundBytes = raftLogBoundBytes
            self.feedBytes = feedBytes
            self.feedBoundBytesPerShard = feedBoundBytesPerShard
            self.historyWindowBytes = historyWindowBytes
            self.historyWindowBoundBytesPerShard = historyWindowBoundBytesPerShard
            self.shardsWithWindowBound = shardsWithWindowBound
            self.rssBytes = rssBytes
        }
    }

    public struct Webhooks: Codable, Sendable, Equatable {
        public var app: String
        /// Checks asked of the app server, by how they ended: its verdict (allowed, rejected, replaced), or no
        /// verdict (failed: an error, a bad answer or the timeout; the app's `onFailure` then applied).
        public var preSendCalls: Int
        public var allowed: Int
        public var rejected: Int
        public var replaced: Int
        public var failed: Int
        /// The median and the slowest of the last (up to) 256 calls, ms.
        public var callMillisP50: Double?
        public var callMillisMax: Double?
        /// Why the last failed call failed, and how long ago.
        public var lastFailure: String?
        public var lastFailureSecondsAgo: Double?
        /// W2 / W5: the after-event callbacks of this node's shard leaders.
        public var afterEvents: AfterEvents?

        public struct AfterEvents: Codable, Sendable, Equatable {
            /// Calls made, and how many of them failed (each failed call is retried after a back-off).
            public var calls: Int
            public var failedCalls: Int
            /// Events the app server took, and events dropped unsent (too old, over the bound, or the app
            /// turned them off).
            public var delivered: Int
            public var dropped: Int
            /// Events waiting on the shards this node leads, and the oldest one's age.
            public var backlog: Int
            public var oldestBacklogSeconds: Double
            /// The median and the slowest of the last (up to) 256 calls, ms.
            public var callMillisP50: Double?
            public var callMillisMax: Double?

            public init(calls: Int, failedCalls: Int, delivered: Int, dropped: Int, backlog: Int,
                        oldestBacklogSeconds: Double, callMillisP50: Double?, callMillisMax: Double?) {
                self.calls = calls
                self.failedCalls = failedCalls
                self.delivered = delivered
                self.dropped = dropped
                self.backlog = backlog
                self.oldestBacklogSeconds = oldestBacklogSeconds
                self.callMillisP50 = callMillisP50
                self.callMillisMax = callMillisMax
            }
        }

        public init(app: String, preSendCalls: Int, allowed: Int, rejected: Int, replaced: Int, failed: Int,
                    callMillisP50: Double?, callMillisMax: Double?, lastFailure: String?, lastFailureSecondsAgo: Double?,
                    afterEvents: AfterEvents? = nil) {
            self.afterEvents = afterEvents
            self.app = app
            self.preSendCalls = preSendCalls
            self.allowed = allowed
            self.rejected = rejected
            self.replaced = replaced
            self.failed = failed
            self.callMillisP50 = callMillisP50
            self.callMillisMax = callMillisMax
            self.lastFailure = lastFailure
            self.lastFailureSecondsAgo = lastFailureSecondsAgo
        }
    }
    public static let activitySamples = 300

    /// One sample of a node's activity: its clients, its leaderships, and what its edge answered since the
    /// sample before.
    public struct Activity: Codable, Sendable, Equatable {
        /// Unix milliseconds when taken.
        public var time: Int64
        public var connections: Int
        public var sessions: Int
        /// Shards this node leads.
        public var leaders: Int
        /// Messages clients sent through this edge that their rooms took, per second.
        public var messagesPerSecond: Double
        /// Room requests (enter, send, any room op) answered per second.
        public var requestsPerSecond: Double
        /// The 99th percentile of those answers' latency, read to written (a bucket bound; nil: none answered).
        public var p99Millis: Double?

        public init(time: Int64, connections: Int, sessions: Int, leaders: Int, messagesPerSecond: Double,
                    requestsPerSecond: Double, p99Millis: Double?) {
            self.time = time
            self.connections = connections
            self.sessions = sessions
            self.leaders = leaders
            self.messagesPerSecond = messagesPerSecond
            self.requestsPerSecond = requestsPerSecond
            self.p99Millis = p99Millis
        }
    }

    /// Issue 18: until this node first held every replica the placement puts on it as a voter (a node that
    /// joined, or started empty), how many it still waits for; nil after that, for good (moves later, when
    /// other nodes come and go, do not make a serving node unready).
    public var replicasToFill: Int?

    /// A group whose membership is on its way to what the placement wants, as its leader sees it.
    public struct Move: Codable, Sendable, Equatable {
        /// A replica catching up as a learner: by snapshot (bytes the learner acknowledged of the snapshot's
        /// size), or from the log (`match` of the leader's `commit`).
        public struct Learner: Codable, Sendable, Equatable {
            public var node: UInt64
            public var match: UInt64
            public var bySnapshot: Bool
            public var snapshotBytesSent: UInt64
            public var snapshotBytes: UInt64

            public init(node: UInt64, match: UInt64, bySnapshot: Bool, snapshotBytesSent: UInt64, snapshotBytes: UInt64) {
                self.node = node
                self.match = match
                self.bySnapshot = bySnapshot
                self.snapshotBytesSent = snapshotBytesSent
                self.snapshotBytes = snapshotBytes
            }
        }

        /// -1 for the meta group.
        public var shard: Int
        public var leader: UInt64
        /// The replicas the placement wants.
        public var target: [UInt64]
        public var voters: [UInt64]
        public var learners: [Learner]
        public var joint: Bool
        public var commit: UInt64
        /// The step the move takes next, or why it waits.
        public var step: String

        public init(shard: Int, leader: UInt64, target: [UInt64], voters: [UInt64], learners: [Learner], joint: Bool,
                    commit: UInt64, step: String) {
            self.shard = shard
            self.leader = leader
            self.target = target
            self.voters = voters
            self.learners = learners
            self.joint = joint
            self.commit = commit
            self.step = step
        }
    }

    /// The client edge's figures: open WebSocket connections, (room, connection) sessions, shard event feeds
    /// being polled, and room events fanned out since start (events received, deliveries written).
    public struct Edge: Codable, Sendable, Equatable {
        public var connections: Int
        public var sessions: Int
        public var feeds: Int
        public var fanoutEvents: Int
        public var fanoutDeliveries: Int

        public init(connections: Int, sessions: Int, feeds: Int, fanoutEvents: Int, fanoutDeliveries: Int) {
            self.connections = connections
            self.sessions = sessions
            self.feeds = feeds
            self.fanoutEvents = fanoutEvents
            self.fanoutDeliveries = fanoutDeliveries
        }
    }

    public init(node: UInt64, version: String, uptimeSeconds: Double, httpAddress: String, peerAddress: String,
                peerEncrypted: Bool = false, shardCount: Int, healthy: Bool, peers: [Peer], shards: [Shard], meta: Meta?,
                edge: Edge? = nil, moves: [Move]? = nil) {
        self.node = node
        self.version = version
        self.uptimeSeconds = uptimeSeconds
        self.httpAddress = httpAddress
        self.peerAddress = peerAddress
        self.peerEncrypted = peerEncrypted
        self.shardCount = shardCount
        self.healthy = healthy
        self.peers = peers
        self.shards = shards
        self.meta = meta
        self.edge = edge
        self.moves = moves
    }

    /// Ready for traffic: the node is registered in the meta group it can reach, every hosted shard knows a
    /// leader, and none is still replaying far behind what it knows is committed (a restarted node catching
    /// up: a Kubernetes readiness probe or the rolling restart waits for it).
    public var ready: Bool { notReadyBecause == nil }

    /// Entries a shard may still have to apply on a ready node: a busy shard is always a few behind.
    public static let readyLag: UInt64 = 1000

    /// Why the node is not ready (nil when it is), for `/readyz`.
    public var notReadyBecause: String? {
        guard let meta else { return "no meta replica can be reached" }
        guard meta.nodes.contains(where: { $0.id == node }) else { return "not registered in the meta group yet" }
        guard !shards.isEmpty else { return "no shard replicas yet" }
        if let missing = replicasToFill, missing > 0 { return "waiting for \(missing) replicas placed on this node" }
        let leaderless = shards.filter { $0.leader == 0 }.count
        guard leaderless == 0 else { return "\(leaderless) of \(shards.count) shards have no leader" }
        let behind = shards.filter { $0.commit > $0.applied + Self.readyLag }.count
        guard behind == 0 else { return "\(behind) of \(shards.count) shards are catching up (applied more than \(Self.readyLag) entries behind commit)" }
        return nil
    }
}
