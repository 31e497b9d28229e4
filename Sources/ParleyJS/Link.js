import { ChatroomError } from './ChatroomError.js';
import { ReconnectPolicy } from './ReconnectPolicy.js';

/** The frame of one request: `{id, op, ...fields}`, fields left `undefined` or `null` stay off the wire. */
export function requestFrame(id, op, fields = {}) {
  const frame = { id, op };
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined && value !== null) frame[key] = value;
  }
  return JSON.stringify(frame);
}

/**
 * Sorts one server frame: `{kind: 'answer', id, ok, data, error}` or `{kind: 'event', name, roomId, seq, data,
 * frame}` (the frame itself for IM events, whose fields sit at the top level). Throws on anything else.
 */
export function decodeFrame(text) {
  const frame = JSON.parse(text);
  if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) throw new Error('not a JSON object');
  if (typeof frame.id === 'number') {
    if (frame.ok === true) return { kind: 'answer', id: frame.id, ok: true, data: frame.data ?? {} };
    return { kind: 'answer', id: frame.id, ok: false, error: ChatroomError.fromAnswer(frame.error) };
  }
  if (typeof frame.event === 'string') {
    return { kind: 'event', name: frame.event, roomId: frame.roomId, seq: frame.seq ?? 0, data: frame.data, frame };
  }
  throw new Error('neither an answer nor an event');
}

/** `host:port` → the edge's WebSocket URL; `ws://…` / `wss://…` addresses pick their own scheme. */
export function edgeURL(address, secure) {
  if (/^wss?:\/\//.test(address)) return /\/ws$/.test(address) ? address : address.replace(/\/?$/, '/ws');
  return `${secure ? 'wss' : 'ws'}://${address}/ws`;
}

/**
 * One WebSocket to an edge: requests with their pending answers (by id, pipelined as the protocol allows),
 * events handed to `onEvent`, and one `onClose` when it ends for any reason (every request still waiting
 * fails with 415 then). Request ids start at 1 (0 is the server's "no id").
 */
export class Link {
  constructor(socket, address) {
    this.socket = socket;
    this.address = address;
    this.pending = new Map();
    this.lastId = 0;
    this.closed = false;
    this.onEvent = () => {};
    this.onClose = () => {};
    socket.onmessage = (message) => this.#receive(message.data);
    socket.onclose = () => this.#ended();
    socket.onerror = () => this.#ended();
  }

  /** Opens `address`; rejects with 415 if the socket fails or the upgrade is not done within `timeoutMs`. */
  static open(address, { secure = false, timeoutMs = 10000, WebSocketImpl = globalThis.WebSocket } = {}) {
    return new Promise((resolve, reject) => {
      let socket;
      try {
        socket = new WebSocketImpl(edgeURL(address, secure));
      } catch (error) {
        reject(ChatroomError.lost(`cannot open ${address}: ${error.message ?? error}`));
        return;
      }
      // A stopped process may still accept TCP and never finish the upgrade.
      const timer = setTimeout(() => {
        socket.onopen = socket.onerror = socket.onclose = null;
        try { socket.close(); } catch {}
        reject(ChatroomError.lost(`${address} did not answer the upgrade within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.onopen = () => { clearTimeout(timer); resolve(new Link(socket, address)); };
      socket.onerror = socket.onclose = () => {
        clearTimeout(timer);
        reject(ChatroomError.lost(`cannot connect to ${address}`));
      };
    });
  }

  /** Sends one request and resolves with the answer's `data`; rejects with the server's error, 408 or 415. */
  request(op, fields, timeoutMs) {
    if (this.closed) return Promise.reject(ChatroomError.lost('connection closed'));
    const id = ++this.lastId;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new ChatroomError(ChatroomError.timeout, `no answer to ${op} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      try {
        this.socket.send(requestFrame(id, op, fields));
      } catch (error) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(ChatroomError.lost(`send failed: ${error.message ?? error}`));
      }
    });
  }

  /** A close handshake; `onClose` follows. */
  close() {
    try { this.socket.close(1000); } catch {}
    this.#ended();
  }

  #receive(text) {
    let frame;
    try {
      frame = decodeFrame(String(text));
    } catch {
      return;  // undecodable: dropped, as the Swift SDK does
    }
    if (frame.kind === 'answer') {
      const slot = this.pending.get(frame.id);
      if (!slot) return;
      this.pending.delete(frame.id);
      clearTimeout(slot.timer);
      if (frame.ok) slot.resolve(frame.data); else slot.reject(frame.error);
      return;
    }
    this.onEvent(frame);
  }

  #ended() {
    if (this.closed) return;
    this.closed = true;
    this.socket.onmessage = this.socket.onclose = this.socket.onerror = null;
    for (const [, slot] of this.pending) {
      clearTimeout(slot.timer);
      slot.reject(ChatroomError.lost('connection closed'));
    }
    this.pending.clear();
    this.onClose();
  }
}

/**
 * Tries `addresses` in order, as both clients do: opens one and runs `handshake(link)` (hello, then enter or
 * login); the first whose handshake resolves is the answer. Failing to connect, or a refusal that names the
 * address (415, 408, 5030, 5040), moves to the next; any other refusal would be the same everywhere and ends
 * the search. `stillWanted()` is asked before each address (throws if the caller gave up); `abandon(link)` is
 * told of a link that failed its handshake, before it is closed.
 */
export async function connectFirst(addresses, options, handshake, { stillWanted = () => {}, abandon = () => {} } = {}) {
  let lastError = ChatroomError.lost('no address to connect to');
  for (const address of addresses ?? []) {
    stillWanted();
    let link;
    try {
      link = await Link.open(address, options);
    } catch (error) {
      lastError = error;
      continue;
    }
    try {
      return await handshake(link);
    } catch (error) {
      abandon(link);
      link.onClose = () => {};
      link.close();
      if (!(error instanceof ChatroomError)) throw error;
      lastError = error;
      if (!ReconnectPolicy.triesNextAddress(error)) throw error;
    }
  }
  throw lastError;
}

/** Resolves after `ms`. */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
