// The console's one way to the API. The token lives in this tab's
// sessionStorage (gone when the tab closes, never sent by the browser on
// its own, unlike a cookie) and leaves it only in the Authorization header
// of a fetch to this origin: never in a URL, never in the page.

const tokenKey = "plantstore.token";

export function token() {
  return sessionStorage.getItem(tokenKey);
}

export function setToken(t) {
  sessionStorage.setItem(tokenKey, t);
}

export function forgetToken() {
  sessionStorage.removeItem(tokenKey);
}

// ApiError is a non-2xx answer: its status and the Error body's message.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let onUnauthorized = () => {};

// whenUnauthorized sets what happens when the API refuses the token (401):
// the console forgets it and asks again.
export function whenUnauthorized(f) {
  onUnauthorized = f;
}

// api fetches a path of this origin with the token. It returns the
// Response of a 2xx answer and throws an ApiError otherwise.
export async function api(path, init = {}) {
  if (!path.startsWith("/")) {
    throw new Error("the console only calls its own origin");
  }
  const headers = new Headers(init.headers || {});
  headers.set("Authorization", "Bearer " + token());
  const resp = await fetch(path, { ...init, headers, credentials: "omit", cache: "no-store", referrerPolicy: "no-referrer" });
  if (resp.ok || resp.status === 304) {
    return resp;
  }
  let message = resp.statusText;
  try {
    const body = await resp.json();
    if (body && typeof body.message === "string") {
      message = body.message;
    }
  } catch {
    // not an Error body: keep the status text
  }
  if (resp.status === 401) {
    onUnauthorized(message);
  }
  throw new ApiError(resp.status, message);
}

export async function apiJSON(path, init) {
  const resp = await api(path, init);
  return { body: await resp.json(), headers: resp.headers };
}

// stream reads the server-sent events of path (an EventSource cannot send
// an Authorization header, so this reads the text/event-stream answer of a
// fetch) and calls onEvent({id, event, data}) for each, until the stream
// ends or signal aborts. It resolves when the stream ends.
export async function stream(path, signal, onEvent) {
  const resp = await api(path, { headers: { Accept: "text/event-stream" }, signal });
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let ev = { id: "", event: "message", data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      return;
    }
    buffer += value;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      let line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.endsWith("\r")) {
        line = line.slice(0, -1);
      }
      if (line === "") {
        if (ev.data.length > 0 || ev.event !== "message") {
          onEvent({ id: ev.id, event: ev.event, data: ev.data.join("\n") });
        }
        ev = { id: ev.id, event: "message", data: [] };
        continue;
      }
      if (line.startsWith(":")) {
        continue; // a comment: the heartbeat
      }
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) {
        val = val.slice(1);
      }
      if (field === "id") {
        ev.id = val;
      } else if (field === "event") {
        ev.event = val;
      } else if (field === "data") {
        ev.data.push(val);
      }
    }
  }
}
