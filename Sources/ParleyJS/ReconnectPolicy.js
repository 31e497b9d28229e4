import { ChatroomError } from './ChatroomError.js';

// When the SDK re-enters a room by itself after a lost connection (E8, the seed's retryCount and
// autoLoginFailed), as the Swift SDK's `ReconnectPolicy`.
export class ReconnectPolicy {
  /** `retryCount`: attempts after a loss (0 never re-enters); attempt n waits n × `delayMs` first. */
  constructor({ retryCount = 3, delayMs = 500 } = {}) {
    this.retryCount = retryCount;
    this.delayMs = delayMs;
  }

  waitBeforeAttempt(attempt) { return this.delayMs * attempt; }

  /** Refusals another attempt cannot change: blocklisted, room closed or gone, unknown app, bad token. */
  static endsRetrying(error) { return ReconnectPolicy.finalCodes.has(error?.code); }

  /** Whether the next address is worth trying after `error` on one: only when the address was the problem. */
  static triesNextAddress(error) {
    return [ChatroomError.connectionLost, ChatroomError.timeout, ChatroomError.noLeader, ChatroomError.clusterTimeout]
      .includes(error?.code);
  }
}

ReconnectPolicy.finalCodes = new Set([
  ChatroomError.inBlocklist, ChatroomError.roomClosed, ChatroomError.roomNotFound, ChatroomError.badToken,
  ChatroomError.tokenExpired, ChatroomError.unknownApp, ChatroomError.tokenRevoked,
]);
