// A protocol test peer for the SDK's offline tests, as the Swift SDK's `ProtocolTestPeer`: a fake network of
// edges behind the standard WebSocket interface, speaking hello, ping, enter (with lastSeq replay and
// replacing), exit and sendMessage over one room log — not Parley, no room rules. Tests drop connections,
// replay from before the client's lastSeq on purpose, refuse enters, silence pings and send `reconnect`.
export class ProtocolTestNetwork {
  constructor() {
    this.edges = new Map();
    /** The room's log: every room-wide event with its seq, shared by all edges (one cluster). */
    this.log = [];
    const network = this;
    this.WebSocket = class FakeSocket {
      constructor(url) {
        this.url = url;
        this.readyState = 0;
        const address = /^wss?:\/\/([^/]+)\/ws$/.exec(url)?.[1];
        const edge = network.edges.get(address);
        setTimeout(() => {
          if (!edge || !edge.up) { this.readyState = 3; this.onerror?.({}); this.onclose?.({}); return; }
          this.readyState = 1;
          this.server = edge.accept(this);
          this.onopen?.({});
        }, 1);
      }
      send(text) {
        if (this.readyState !== 1) throw new Error('not open');
        const frame = JSON.parse(text);
        setTimeout(() => this.server?.receive(frame), 0);
      }
      close() {
        if (this.readyState === 3) return;
        this.readyState = 3;
        this.server?.gone();
        setTimeout(() => this.onclose?.({}), 0);
      }
      /** From the server's side. */
      deliver(object) { if (this.readyState === 1) setTimeout(() => this.onmessage?.({ data: JSON.stringify(object) }), 0); }
      drop() { if (this.readyState !== 3) { this.readyState = 3; this.server?.gone(); setTimeout(() => this.onclose?.({}), 0); } }
    };
  }

  edge(address) {
    const edge = new ProtocolTestEdge(this, address);
    this.edges.set(address, edge);
    return edge;
  }

  /** A room-wide event appended to the log and sent to every connection in the room on every edge. */
  publish(event, data) {
    const seq = this.log.length + 1;
    const frame = { event, roomId: 'r1', seq, data };
    this.log.push(frame);
    for (const edge of this.edges.values()) for (const c of edge.connections) if (c.entered) c.socket.deliver(frame);
    return seq;
  }
}

export class ProtocolTestEdge {
  constructor(network, address) {
    this.network = network;
    this.address = address;
    this.up = true;
    this.connections = new Set();
    this.enters = [];
    this.refuseEnter = null;
    this.pingAnswer = 'ok';  // 'ok' | 'silent' | a code
    this.heartbeatMs = 25000;
    /** Replays start this many items before the client's lastSeq (repeats the SDK must drop). */
    this.replayOverlap = 0;
    /** Replays hold at most this many items (the newest; gapTooOld when more came). */
    this.maxReplay = Infinity;
  }

  accept(socket) {
    const edge = this;
    const connection = {
      socket, entered: false,
      receive(frame) { edge.#handle(connection, frame); },
      gone() { edge.connections.delete(connection); },
    };
    this.connections.add(connection);
    return connection;
  }

  dropAll() { for (const c of [...this.connections]) c.socket.drop(); }

  #answer(connection, id, data) { connection.socket.deliver({ id, ok: true, data }); }
  #refuse(connection, id, code, extra = {}) { connection.socket.deliver({ id, ok: false, error: { code, message: `refused ${code}`, ...extra } }); }

  #handle(connection, frame) {
    const log = this.network.log;
    switch (frame.op) {
      case 'hello':
        return this.#answer(connection, frame.id, { version: 1, heartbeatMs: this.heartbeatMs, idleTimeoutMs: 75000, maxFrameBytes: 65536,
                                                    edge: this.address, connection: `${this.address}#${this.enters.length}` });
      case 'ping':
        if (this.pingAnswer === 'silent') return;
        if (this.pingAnswer !== 'ok') return this.#refuse(connection, frame.id, this.pingAnswer, { retryAfterMs: 50 });
        return this.#answer(connection, frame.id, { time: Date.now() });
      case 'enter': {
        this.enters.push(frame);
        if (this.refuseEnter) return this.#refuse(connection, frame.id, this.refuseEnter);
        const roomSeq = log.length;
        const lastSeq = frame.lastSeq;
        let replay = [];
        let gapTooOld = false;
        if (lastSeq !== undefined) {
          replay = log.filter((e) => e.seq > Math.max(0, lastSeq - this.replayOverlap));
          if (replay.length > this.maxReplay) { replay = replay.slice(-this.maxReplay); gapTooOld = true; }
        }
        const answer = { room: { roomId: 'r1', seq: roomSeq }, member: {}, authMode: 'independent', account: 'u',
                         resumed: lastSeq !== undefined && !gapTooOld, gapTooOld };
        if (lastSeq !== undefined) answer.replayFromSeq = replay[0]?.seq ?? roomSeq + 1;
        this.#answer(connection, frame.id, answer);
        connection.entered = true;
        for (const e of replay) connection.socket.deliver(e);
        return;
      }
      case 'exit':
        connection.entered = false;
        return this.#answer(connection, frame.id, {});
      case 'sendMessage': {
        const seq = this.network.publish('message', { body: frame.body, clientMessageId: frame.clientMessageId });
        return this.#answer(connection, frame.id, { seq, time: 1, serverId: seq });
      }
      default:
        return this.#refuse(connection, frame.id, 4004);
    }
  }
}
