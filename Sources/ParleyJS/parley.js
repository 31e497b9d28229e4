// Parley's JavaScript SDK: the client side of docs/protocol.md for browsers (and any runtime with a standard
// WebSocket), dependency-free. docs/sdk.md, "JavaScript".
export { ChatroomClient, ConnectionState, PROTOCOL_VERSIONS, ROOM_OPS, ROOM_EVENTS, newClientMessageId } from './ChatroomClient.js';
export { IMClient, IM_OPS, IM_EVENTS } from './IMClient.js';
export { ChatroomError } from './ChatroomError.js';
export { ResumeLedger } from './ResumeLedger.js';
export { ReconnectPolicy } from './ReconnectPolicy.js';
export { Link, decodeFrame, requestFrame, edgeURL } from './Link.js';
