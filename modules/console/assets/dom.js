// Building the page from data. User content (names, tags, endpoint names,
// messages) only ever goes in as text (textContent), never as markup, so
// nothing in it can become markup or script.

export function $(id) {
  return document.getElementById(id);
}

// el makes an element with text content (a string, or null for an
// absent value, shown as "none").
export function el(tag, text, className) {
  const e = document.createElement(tag);
  if (text === null || text === undefined) {
    e.textContent = "none";
    e.className = "none";
  } else {
    e.textContent = String(text);
  }
  if (className) {
    e.classList.add(className);
  }
  return e;
}

// row makes a table row of text cells.
export function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    tr.append(el("td", c));
  }
  return tr;
}

export function clear(e) {
  e.replaceChildren();
}

export function time(iso) {
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toLocaleTimeString();
}
