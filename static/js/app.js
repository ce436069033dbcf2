// Every htmx request that fails says so. 422 and 409 answers carry their error partial and
// are swapped into place (see the htmx-config meta in base.html); anything else that fails
// (403, 404, 5xx, a dropped connection) shows this visible alert instead of nothing.
(() => {
  const MESSAGES = {
    403: "You don't have permission to do that (403). Your role may have changed: reload the page.",
    404: "Not found (404): it may have been deleted meanwhile. Reload the page.",
    413: "That was too large for the server to accept (413).",
    429: "Too many requests (429): wait a moment and try again.",
  };

  function describe(status) {
    if (MESSAGES[status]) return MESSAGES[status];
    if (status >= 500) return `The server failed (${status}). Nothing may have been saved; try again, and check the Jobs and logs if it persists.`;
    return `The request was refused (${status}).`;
  }

  function show(text) {
    const box = document.getElementById("request-alert");
    const out = document.getElementById("request-alert-text");
    if (!box || !out) return;
    out.textContent = text;
    box.hidden = false;
    box.scrollIntoView({ block: "nearest" });
  }

  function hide() {
    const box = document.getElementById("request-alert");
    if (box) box.hidden = true;
  }

  document.addEventListener("htmx:responseError", (event) => {
    const xhr = event.detail.xhr;
    show(describe(xhr ? xhr.status : 0));
  });
  document.addEventListener("htmx:sendError", () => {
    show("The server could not be reached: check your connection and try again. Nothing was saved.");
  });
  document.addEventListener("htmx:timeout", () => {
    show("The server took too long to answer; try again.");
  });
  // A new submission clears the previous failure (polling GETs leave it up).
  document.addEventListener("htmx:beforeRequest", (event) => {
    const verb = event.detail.requestConfig && event.detail.requestConfig.verb;
    if (verb && verb !== "get") hide();
  });
  document.addEventListener("DOMContentLoaded", () => {
    const close = document.getElementById("request-alert-close");
    if (close) close.addEventListener("click", hide);
  });
})();

// Copy buttons: `data-copy-from="<element id>"` copies that element's text (a new API key,
// a one-time password) and says so on the button.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy-from]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copyFrom);
  if (!source) return;
  const text = source.textContent.trim();
  const done = () => { button.textContent = "Copied"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => { button.textContent = "Select and copy"; });
  } else {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    done();
    if (document.execCommand) document.execCommand("copy");
  }
});
