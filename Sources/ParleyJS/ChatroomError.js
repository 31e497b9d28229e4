// An error answered by the server (the codes of docs/protocol.md and docs/rooms.md) or raised by the SDK
// itself (408 and 415: NIM's codes for a timed-out request and a lost connection). The same codes as the
// Swift SDK's `ChatroomError`.
export class ChatroomError extends Error {
  constructor(code, message, retryAfterMs) {
    super(`ChatroomError(${code}: ${message})`);
    this.name = 'ChatroomError';
    this.code = code;
    this.reason = message;
    if (retryAfterMs !== undefined && retryAfterMs !== null) this.retryAfterMs = retryAfterMs;
  }

  /// The server's `error` object of an answer.
  static fromAnswer(error) {
    if (!error || typeof error.code !== 'number') return new ChatroomError(414, 'answer without ok or error');
    return new ChatroomError(error.code, String(error.message ?? ''), error.retryAfterMs);
  }

  static lost(why) { return new ChatroomError(ChatroomError.connectionLost, why); }
}

// SDK-side codes.
/** No answer within the request timeout (the command may or may not have applied). */
ChatroomError.timeout = 408;
/** The connection is gone (or was never made): the request was not answered. */
ChatroomError.connectionLost = 415;
// Protocol codes the SDK acts on.
ChatroomError.noPermission = 403;
ChatroomError.roomNotFound = 404;
ChatroomError.badParameter = 414;
ChatroomError.rateLimited = 416;
ChatroomError.roomClosed = 13002;
ChatroomError.inBlocklist = 13003;
ChatroomError.notEntered = 13100;
ChatroomError.anonymousCannotSend = 13102;
ChatroomError.historyGone = 13112;
ChatroomError.noCommonVersion = 4001;
ChatroomError.badToken = 4010;
ChatroomError.tokenExpired = 4011;
ChatroomError.unknownApp = 4012;
ChatroomError.otherAccount = 4013;
ChatroomError.tokenRevoked = 4015;
ChatroomError.alreadyInRoom = 4016;
ChatroomError.tooManyLogins = 4017;
ChatroomError.notLoggedIn = 4018;
ChatroomError.noLeader = 5030;
ChatroomError.clusterTimeout = 5040;
ChatroomError.imLogGone = 14207;
