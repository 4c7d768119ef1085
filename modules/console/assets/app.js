// The console's pages, chosen by the URL's fragment (#/plants,
// #/plants/<id>, #/feed, #/figures, #/webhooks, #/webhooks/<endpoint>), and the sign-in.
import { $ } from "./dom.js";
import { token, setToken, forgetToken, whenUnauthorized, api, ApiError } from "./api.js";
import { initPlants, enterPlants, enterPlant } from "./plants.js";
import { initFeed, enterFeed, leaveFeed } from "./feed.js";
import { enterFigures, leaveFigures } from "./figures.js";
import { initWebhooks, enterWebhooks, leaveWebhooks } from "./webhooks.js";

const pages = ["login", "plants", "plant", "feed", "figures", "webhooks"];
let leave = () => {};

function showPage(name) {
  for (const p of pages) {
    $(p).hidden = p !== name;
  }
  const signedIn = name !== "login";
  $("nav").hidden = !signedIn;
  $("logout").hidden = !signedIn;
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.dataset.page === name || (name === "plant" && a.dataset.page === "plants"));
  }
}

// decoded is a fragment's part as the link that made it encoded it, or
// as it stands when it is no such encoding.
function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function route() {
  leave();
  leave = () => {};
  if (!token()) {
    showPage("login");
    $("token").focus();
    return;
  }
  const hash = location.hash.replace(/^#\/?/, "");
  const plant = /^plants\/(-?\d+)$/.exec(hash);
  const hooks = /^webhooks(?:\/(.+))?$/.exec(hash);
  if (plant) {
    showPage("plant");
    enterPlant(plant[1]);
  } else if (hash === "feed") {
    showPage("feed");
    enterFeed();
    leave = leaveFeed;
  } else if (hash === "figures") {
    showPage("figures");
    enterFigures();
    leave = leaveFigures;
  } else if (hooks) {
    showPage("webhooks");
    enterWebhooks(hooks[1] === undefined ? null : decoded(hooks[1]));
    leave = leaveWebhooks;
  } else {
    showPage("plants");
    enterPlants();
  }
}

async function signIn(ev) {
  ev.preventDefault();
  const input = $("token");
  const t = input.value.trim();
  input.value = ""; // the field keeps nothing once read
  $("login-error").textContent = "";
  setToken(t);
  try {
    await api("/plants?limit=1");
  } catch (e) {
    forgetToken();
    $("login-error").textContent = e instanceof ApiError && e.status === 403
      ? "This token may not read plants (it lacks the scope plants:read)."
      : "Sign-in failed: " + e.message;
    return;
  }
  route();
}

function signOut() {
  leave();
  leave = () => {};
  forgetToken();
  route();
}

whenUnauthorized((message) => {
  forgetToken();
  leave();
  leave = () => {};
  showPage("login");
  $("login-error").textContent = "The server refused the token: " + message;
});

$("login-form").addEventListener("submit", signIn);
$("logout").addEventListener("click", signOut);
window.addEventListener("hashchange", route);
initPlants();
initFeed();
initWebhooks();
route();
