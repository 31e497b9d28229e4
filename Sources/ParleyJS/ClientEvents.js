// A `CustomEvent` where the runtime has one (browsers, Node 19+); an `Event` carrying `detail` where it has not.
const makeEvent = typeof CustomEvent === 'function'
  ? (type, detail) => new CustomEvent(type, { detail })
  : (type, detail) => Object.assign(new Event(type), { detail });

// What a client reports without being asked: every event is dispatched on the client (an `EventTarget`:
// `client.addEventListener('message', e => e.detail)`) and handed to every open async iterator
// (`for await (const event of client.events())`), in the order it happened. An iterator buffers from its
// creation until the loop leaves it or the client closes.
export class ClientEvents extends EventTarget {
  #iterators = new Set();
  #finished = false;

  /** Dispatches `{type, ...detail}` as a `CustomEvent(type, {detail})` and to every iterator. */
  emit(type, detail) {
    const event = { type, ...detail };
    this.dispatchEvent(makeEvent(type, event));
    for (const iterator of this.#iterators) iterator.push(event);
  }

  /** An async iterator of every event from now on. */
  events() {
    const queue = [];
    let wake = null;
    let done = this.#finished;
    const iterators = this.#iterators;
    const iterator = {
      push(event) {
        if (done) return;
        if (wake) { const w = wake; wake = null; w({ value: event, done: false }); } else queue.push(event);
      },
      finish() {
        done = true;
        if (wake) { const w = wake; wake = null; w({ value: undefined, done: true }); }
      },
      next() {
        if (queue.length > 0) return Promise.resolve({ value: queue.shift(), done: false });
        if (done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => { wake = resolve; });
      },
      return() {
        iterators.delete(iterator);
        iterator.finish();
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]() { return iterator; },
    };
    if (!done) iterators.add(iterator);
    return iterator;
  }

  /** Ends every iterator (after what they hold); listeners stay attached but nothing more is dispatched. */
  finishEvents() {
    this.#finished = true;
    for (const iterator of this.#iterators) iterator.finish();
    this.#iterators.clear();
  }
}
