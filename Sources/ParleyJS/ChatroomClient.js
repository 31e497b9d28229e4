import { ChatroomError } from './ChatroomError.js';
import { ClientEvents } from './ClientEvents.js';
import { connectFirst, sleep } from './Link.js';
import { ReconnectPolicy } from './ReconnectPolicy.js';
import { ResumeLedger } from './ResumeLedger.js';

export const PROTOCOL_VERSIONS = [1];

/** The seed's NIMChatroomConnectionState: Entering 0, EnterOK 1, EnterFailed 2, LoseConnection 3. */
export const ConnectionState = Object.freeze({ entering: 0, enterOK: 1, enterFailed: 2, loseConnection: 3 });

/** Every room op of docs/protocol.md and the ChatroomClient method that sends it. */
export const ROOM_OPS = Object.freeze({
  hello: 'enterChatroom', ping: '(heartbeat)', enter: 'enterChatroom', exit: 'exitChatroom', authMode: 'authMode',
  sendMessage: 'sendMessage', fetchHistory: 'fetchMessageHistory', fetchRoomInfo: 'fetchChatroomInfo',
  updateRoomInfo: 'updateChatroomInfo', fetchMembers: 'fetchChatroomMembers',
  fetchMembersByIds: 'fetchChatroomMembersByIds', updateMyMemberInfo: 'updateMyChatroomMemberInfo',
  markManager: 'markMemberManager', markNormal: 'markNormalMember', setBlacklist: 'updateMemberBlack',
  setMute: 'updateMemberMute', setTempMute: 'updateMemberTempMute', kick: 'kickMember', setRoomMute: 'setRoomMute',
  updateAllowlist: 'updateAllowlist', queueList: 'fetchChatroomQueue', queueOffer: 'updateChatroomQueueObject',
  queueBatchUpdate: 'batchUpdateChatroomQueueObject', queuePoll: 'removeChatroomQueueObject',
  queueDrop: 'dropChatroomQueue',
});

/** Every room event of docs/protocol.md: the server's, as dispatched (`reconnect` is the SDK's to act on). */
export const ROOM_EVENTS = Object.freeze([
  'message', 'notification', 'kicked', 'status', 'memberChange', 'multiLoginSync', 'block', 'ban', 'gap', 'shed', 'reconnect',
]);

let clientMessageCounter = 0;
/** A client message id unique enough for dedupe of one sender's resends. */
export function newClientMessageId() {
  clientMessageCounter += 1;
  const random = globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(36).slice(2)}`;
  return `js-${random}-${clientMessageCounter}`;
}

/**
 * The chat room client (the seed's NIMChatroomManager), as the Swift SDK's `ChatroomClient`: one WebSocket per
 * entered room (each room has its own addresses and fails and recovers on its own), every call a Promise of
 * the server's answer that rejects with `ChatroomError`, everything else an event (`addEventListener` or
 * `for await (const e of client.events())`).
 *
 * Events: `message`, `notification`, `kicked`, `status`, `memberChange`, `multiLoginSync`, `block`, `ban`
 * and `gap` from the server, deduplicated by seq; `connectionState` and `autoLoginFailed` from the SDK.
 * Each is `{type, roomId, seq, data}`.
 */
export class ChatroomClient extends ClientEvents {
  /**
   * @param {object} options
   * @param {(roomId: string) => Promise<string[]>|string[]} options.addressLookup the app server's room address
   *   lookup (E6, requestAddr): edges best first, asked again on every enter and re-enter
   */
  constructor({
    addressLookup, requestTimeoutMs = 10000, connectTimeoutMs = 10000, reconnectDelayMs = 500,
    clientName = 'parley-js/0.1', secure, rateLimitRetries = 3, WebSocketImpl = globalThis.WebSocket,
  } = {}) {
    super();
    if (typeof addressLookup !== 'function') throw new TypeError('addressLookup (roomId) => [addresses] is required');
    this.options = {
      addressLookup, requestTimeoutMs, connectTimeoutMs, reconnectDelayMs, clientName, rateLimitRetries, WebSocketImpl,
      secure: secure ?? (globalThis.location?.protocol === 'https:'),
    };
    this.rooms = new Map();
    this.lastEpoch = 0;
  }

  /** The same addresses for every room (one node, tests, edges the app knows). */
  static addresses(list) { return () => list; }

  /** The rooms this client is in or re-entering. */
  get enteredRoomIds() { return [...this.rooms.keys()].sort(); }

  /** Where a room would resume (tests, diagnostics). */
  ledger(roomId) { return this.rooms.get(roomId)?.ledger; }

  // Entering and leaving

  /**
   * Enters a room (E1, E4, E5): `auth` is `{mode: 'im'|'independent', appKey, account, token}` or
   * `{mode: 'anonymous', appKey}` (nickname and avatar required). Resolves with the enter answer
   * `{room, member, authMode, account, resumed, gapTooOld}`. States go entering → enterOK or enterFailed.
   */
  async enterChatroom({ roomId, auth, nickname, avatar, roomExt, roomNotifyExt, retryCount = 3 }) {
    if (this.rooms.has(roomId)) throw new ChatroomError(ChatroomError.alreadyInRoom, `already in room ${roomId}`);
    const epoch = ++this.lastEpoch;
    const request = { roomId, auth, nickname, avatar, roomExt, roomNotifyExt, retryCount };
    this.rooms.set(roomId, { epoch, request, phase: 'entering', link: null, heartbeat: null, ledger: new ResumeLedger(),
                             early: [], handingOver: false });
    this.#state(roomId, 'entering');
    try {
      const answer = await this.#connectAndEnter(roomId, epoch, null);
      this.#state(roomId, 'enterOK');
      return answer;
    } catch (error) {
      if (this.rooms.get(roomId)?.epoch === epoch) this.#teardown(roomId);
      this.#state(roomId, 'enterFailed');
      throw error;
    }
  }

  /** Leaves a room (E10); the room is left locally even when the server cannot be told. */
  async exitChatroom(roomId) {
    const session = this.rooms.get(roomId);
    if (!session) throw this.#notEntered(roomId);
    let refusal = null;
    if (session.phase === 'entered' && session.link) {
      try {
        await session.link.request('exit', { roomId }, this.options.requestTimeoutMs);
      } catch (error) {
        if (error.code !== ChatroomError.connectionLost && error.code !== ChatroomError.timeout) refusal = error;
      }
    }
    if (this.rooms.get(roomId)?.epoch === session.epoch) this.#teardown(roomId);
    if (refusal) throw refusal;
  }

  /** Closes every connection (the server ends their sessions) and ends the event iterators. */
  close() {
    for (const roomId of [...this.rooms.keys()]) this.#teardown(roomId);
    this.finishEvents();
  }

  // The room ops (docs/protocol.md "Ops"; docs/sdk.md has the table)

  async authMode(roomId) { return (await this.call(roomId, 'authMode')).authMode; }

  /**
   * Sends a message (N1); resolves `{seq, time, serverId}`. Over a budget (416, A1) the message waits in the
   * room's retry line: one at a time, each after the answer's `retryAfterMs`, with the same clientMessageId
   * (nothing was stored for a 416, so a resend is safe), up to `rateLimitRetries` tries each; then it rejects
   * with the 416 and its `retryAfterMs`. While the line holds messages, new ones join its end, so one
   * sender's messages keep their order.
   */
  async sendMessage(roomId, { type = 'text', body, ext, clientMessageId, priority } = {}) {
    const fields = { roomId, type, body, ext, clientMessageId: clientMessageId ?? newClientMessageId(), priority };
    const session = this.rooms.get(roomId);
    if (!session?.retryLine?.waiting) {
      try {
        return await this.call(roomId, 'sendMessage', fields);
      } catch (error) {
        if (error.code !== ChatroomError.rateLimited || this.options.rateLimitRetries <= 0) throw error;
        return this.#retryInLine(roomId, fields, error.retryAfterMs);
      }
    }
    return this.#retryInLine(roomId, fields, 0);
  }

  #retryInLine(roomId, fields, firstWaitMs) {
    const session = this.rooms.get(roomId);
    if (!session) return Promise.reject(this.#notEntered(roomId));
    const line = session.retryLine ?? (session.retryLine = { tail: Promise.resolve(), waiting: 0 });
    line.waiting += 1;
    const turn = line.tail.then(async () => {
      let wait = firstWaitMs;
      for (let attempt = 1; ; attempt++) {
        if (wait > 0) await sleep(wait + Math.floor(Math.random() * 10));
        try {
          return await this.call(roomId, 'sendMessage', fields);
        } catch (error) {
          if (error.code !== ChatroomError.rateLimited || attempt >= this.options.rateLimitRetries) throw error;
          wait = error.retryAfterMs ?? 100;
        }
      }
    }).finally(() => { line.waiting -= 1; });
    line.tail = turn.catch(() => {});
    return turn;
  }

  /** N5: `{startTime (ms, 0 = now), limit, order ('desc'|'asc'), types}` → history items. */
  async fetchMessageHistory(roomId, { startTime, limit = 20, order, types } = {}) {
    return (await this.call(roomId, 'fetchHistory', { roomId, startTime, limit, order, types })).messages;
  }

  async fetchChatroomInfo(roomId) { return (await this.call(roomId, 'fetchRoomInfo', { roomId })).room; }

  /** R4: `update` has any of name, announcement, broadcastUrl, ext, queueLevel. */
  async updateChatroomInfo(roomId, update, { needNotify, notifyExt } = {}) {
    await this.call(roomId, 'updateRoomInfo', { ...update, roomId, needNotify, notifyExt });
  }

  async setRoomMute(roomId, enable, { needNotify, notifyExt } = {}) {
    await this.call(roomId, 'setRoomMute', { roomId, enable, needNotify, notifyExt });
  }

  async updateAllowlist(roomId, enable, userIds) {
    await this.call(roomId, 'updateAllowlist', { roomId, enable, userIds });
  }

  /** M4: type 'regular' | 'temp' | 'regularOnline' | 'unregularReversed'; anchor is the last page's pageKey. */
  async fetchChatroomMembers(roomId, { type = 'regular', anchor, limit = 100 } = {}) {
    return (await this.call(roomId, 'fetchMembers', { roomId, type, anchor, limit })).members;
  }

  async fetchChatroomMembersByIds(roomId, userIds) {
    return (await this.call(roomId, 'fetchMembersByIds', { roomId, userIds })).members;
  }

  /** M6: `update` has any of nickname, avatar, ext. */
  async updateMyChatroomMemberInfo(roomId, update, { needNotify, notifyExt } = {}) {
    await this.call(roomId, 'updateMyMemberInfo', { ...update, roomId, needNotify, notifyExt });
  }

  async markMemberManager(roomId, userId, enable, { notifyExt } = {}) {
    await this.call(roomId, 'markManager', { roomId, userId, enable, notifyExt });
  }

  async markNormalMember(roomId, userId, enable, { notifyExt } = {}) {
    await this.call(roomId, 'markNormal', { roomId, userId, enable, notifyExt });
  }

  async updateMemberBlack(roomId, userId, enable, { notifyExt } = {}) {
    await this.call(roomId, 'setBlacklist', { roomId, userId, enable, notifyExt });
  }

  async updateMemberMute(roomId, userId, enable, { notifyExt } = {}) {
    await this.call(roomId, 'setMute', { roomId, userId, enable, notifyExt });
  }

  /** M8: `duration` in seconds, 0 lifts it. */
  async updateMemberTempMute(roomId, userId, duration, { needNotify, notifyExt } = {}) {
    await this.call(roomId, 'setTempMute', { roomId, userId, duration, needNotify, notifyExt });
  }

  async kickMember(roomId, userId, { notifyExt } = {}) {
    await this.call(roomId, 'kick', { roomId, userId, notifyExt });
  }

  async fetchChatroomQueue(roomId) { return (await this.call(roomId, 'queueList', { roomId })).elements; }

  async updateChatroomQueueObject(roomId, { key, value }, { transient } = {}) {
    await this.call(roomId, 'queueOffer', { roomId, key, value, transient });
  }

  /** Q4: resolves the keys not found. */
  async batchUpdateChatroomQueueObject(roomId, elements, { needNotify, notifyExt } = {}) {
    return (await this.call(roomId, 'queueBatchUpdate', { roomId, elements, needNotify, notifyExt })).notFound;
  }

  /** Q5: key '' (or none) takes the head; resolves the removed `{key, value}`. */
  async removeChatroomQueueObject(roomId, key) {
    return (await this.call(roomId, 'queuePoll', { roomId, key })).element;
  }

  async dropChatroomQueue(roomId) { await this.call(roomId, 'queueDrop', { roomId }); }

  /** Sends a room request on the room's connection; resolves the answer's `data`. */
  call(roomId, op, fields = { roomId }) {
    const session = this.rooms.get(roomId);
    if (!session) return Promise.reject(this.#notEntered(roomId));
    if (session.phase !== 'entered' || !session.link) {
      return Promise.reject(ChatroomError.lost(`room ${roomId} is reconnecting`));
    }
    return session.link.request(op, fields, this.options.requestTimeoutMs);
  }

  // Connecting

  /**
   * Asks the lookup for the room's addresses and tries each: connect, hello, enter. A refusal another edge
   * would repeat (bad token, blocklist, …) ends the search.
   */
  async #connectAndEnter(roomId, epoch, resume, { addresses, replacing } = {}) {
    let list = addresses;
    if (!list) {
      try {
        list = await this.options.addressLookup(roomId);
      } catch (error) {
        throw error instanceof ChatroomError ? error : ChatroomError.lost(`address lookup for ${roomId} failed: ${error.message ?? error}`);
      }
    }
    const wanted = () => {
      if (this.rooms.get(roomId)?.epoch !== epoch) throw ChatroomError.lost(`room ${roomId} was left while entering`);
    };
    const options = { secure: this.options.secure, timeoutMs: this.options.connectTimeoutMs, WebSocketImpl: this.options.WebSocketImpl };
    if (!list?.length) throw ChatroomError.lost(`no address for room ${roomId}`);
    return connectFirst(list, options, async (link) => {
      wanted();
      link.onEvent = (frame) => this.#receive(roomId, link, frame);
      link.onClose = () => this.#linkClosed(roomId, link);
      // Events of this link belong to the room from now on: a resumed enter's replay follows its answer.
      this.rooms.get(roomId).link = link;
      const timeout = this.options.requestTimeoutMs;
      const hello = await link.request('hello', { versions: PROTOCOL_VERSIONS, client: this.options.clientName }, timeout);
      const { request } = this.rooms.get(roomId) ?? {};
      const answer = await link.request('enter', {
        roomId, auth: request?.auth, nickname: request?.nickname, avatar: request?.avatar, roomExt: request?.roomExt,
        roomNotifyExt: request?.roomNotifyExt, lastSeq: resume ?? undefined, replacing,
      }, timeout);
      wanted();
      this.#entered(roomId, answer, resume !== null, hello.heartbeatMs, link);
      return answer;
    }, {
      stillWanted: wanted,
      abandon: (link) => {
        const current = this.rooms.get(roomId);
        if (current?.link === link) { current.link = null; current.early = []; }
      },
    });
  }

  #entered(roomId, answer, reentered, heartbeatMs, link) {
    const session = this.rooms.get(roomId);
    if (!session) return;
    session.phase = 'entered';
    session.link = link;
    const lost = session.ledger.entered({
      roomSeq: answer.room?.seq ?? 0, resumed: !!answer.resumed, gapTooOld: !!answer.gapTooOld,
      replayFromSeq: answer.replayFromSeq, reentered,
    });
    if (lost) session.ledger.skip(lost.toSeq);
    clearInterval(session.heartbeat);
    session.heartbeat = setInterval(() => this.#beat(roomId, link), heartbeatMs || 25000);
    const early = session.early;
    session.early = [];
    if (lost) this.emit('gap', { roomId, seq: 0, data: lost });
    for (const frame of early) if (this.rooms.get(roomId)?.link === link) this.#admit(roomId, link, frame);
  }

  /** A ping without an answer in time means the link is dead even if TCP has not noticed (a paused edge). */
  async #beat(roomId, link) {
    try {
      await link.request('ping', {}, this.options.requestTimeoutMs);
    } catch (error) {
      // Only silence or a dead socket means the link is gone: a refusal (416 over the connection's budget)
      // came from a live edge.
      if (error.code === ChatroomError.timeout || error.code === ChatroomError.connectionLost) link.close();
    }
  }

  // Inbound

  #receive(roomId, link, frame) {
    const session = this.rooms.get(roomId);
    if (!session || session.link !== link || frame.roomId !== roomId) return;
    if (frame.name === 'reconnect') {
      this.#handOver(roomId, link, frame.data?.addresses ?? [], frame.data?.sessionId);
      return;
    }
    if (!ROOM_EVENTS.includes(frame.name)) return;  // an event this SDK version does not know
    if (session.phase !== 'entered') {
      // Held until the enter's answer is recorded, so a gapTooOld range is not hidden by later events.
      session.early.push(frame);
      return;
    }
    this.#admit(roomId, link, frame);
  }

  /** Dedupes (X2) one event of an entered room and hands it to the app. */
  #admit(roomId, link, frame) {
    const session = this.rooms.get(roomId);
    if (!session || !session.ledger.admit(frame.seq)) return;
    if (frame.name === 'gap') session.ledger.skip(frame.data?.toSeq ?? 0);
    // E9: a kicked session is over and must not come back by itself.
    if (frame.name === 'kicked') this.#teardown(roomId);
    this.emit(frame.name, { roomId, seq: frame.seq, data: frame.data });
    if (frame.name === 'status' && frame.data?.status === 'lost' && session.link === link) {
      // Issue 16: the cluster ended the session, not the user: re-enter from the resume point.
      link.close();
    }
  }

  #linkClosed(roomId, link) {
    const session = this.rooms.get(roomId);
    if (!session || session.link !== link) return;
    clearInterval(session.heartbeat);
    session.heartbeat = null;
    session.link = null;
    session.early = [];
    if (session.phase !== 'entered') return;
    session.phase = 'reconnecting';
    this.#state(roomId, 'loseConnection');
    const policy = new ReconnectPolicy({ retryCount: session.request.retryCount, delayMs: this.options.reconnectDelayMs });
    this.#reconnect(roomId, session.epoch, policy);
  }

  /** E8: up to retryCount attempts over the whole address list, each re-entering with the resume point. */
  async #reconnect(roomId, epoch, policy) {
    let lastError = ChatroomError.lost(`retryCount is 0: not re-entering ${roomId}`);
    for (let attempt = 1; attempt <= policy.retryCount; attempt++) {
      await sleep(policy.waitBeforeAttempt(attempt));
      const session = this.rooms.get(roomId);
      if (session?.epoch !== epoch) return;
      this.#state(roomId, 'entering');
      try {
        await this.#connectAndEnter(roomId, epoch, session.ledger.resumePoint);
        this.#state(roomId, 'enterOK');
        return;
      } catch (error) {
        if (this.rooms.get(roomId)?.epoch !== epoch) return;
        lastError = error instanceof ChatroomError ? error : ChatroomError.lost(String(error));
        this.#state(roomId, 'enterFailed');
        if (ReconnectPolicy.endsRetrying(lastError)) break;
      }
    }
    if (this.rooms.get(roomId)?.epoch !== epoch) return;
    this.#teardown(roomId);
    this.emit('autoLoginFailed', { roomId, seq: 0, data: { error: lastError } });
  }

  // Moving to another edge (C5)

  /**
   * The room's edge is draining: enter at `addresses` with the resume point, taking the session over
   * (`replacing`) while the old link stays open, then close the old link. The app sees no state change and the
   * room no exit and re-entry; if no address takes the room, it reconnects as after any loss.
   */
  async #handOver(roomId, old, addresses, replacing) {
    const session = this.rooms.get(roomId);
    if (!session || session.phase !== 'entered' || session.link !== old || session.handingOver) return;
    session.handingOver = true;
    const epoch = session.epoch;
    old.onClose = () => {};  // its close no longer means a loss: the move decides
    try {
      await this.#connectAndEnter(roomId, epoch, session.ledger.resumePoint, { addresses, replacing });
    } catch {
      const now = this.rooms.get(roomId);
      if (now?.epoch === epoch) {
        // Back to the old link, then lost: the usual reconnect resumes from the ledger.
        now.link = old;
        now.phase = 'entered';
        this.#linkClosed(roomId, old);
      }
    } finally {
      const now = this.rooms.get(roomId);
      if (now?.epoch === epoch) now.handingOver = false;
      old.close();
    }
  }

  // Teardown

  #teardown(roomId) {
    const session = this.rooms.get(roomId);
    if (!session) return;
    this.rooms.delete(roomId);
    clearInterval(session.heartbeat);
    if (session.link) {
      session.link.onClose = () => {};
      session.link.close();
    }
  }

  #state(roomId, state) {
    this.emit('connectionState', { roomId, seq: 0, data: { state, code: ConnectionState[state] } });
  }

  #notEntered(roomId) { return new ChatroomError(ChatroomError.notEntered, `not in room ${roomId}`); }
}
