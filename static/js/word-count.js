// Live word count for textareas with data-word-limit: counts runs of non-space, as the
// server does, and says when the text is over the limit (the server refuses it then).
document.addEventListener("DOMContentLoaded", () => {
  for (const area of document.querySelectorAll("textarea[data-word-limit]")) {
    const limit = Number(area.dataset.wordLimit);
    const out = document.getElementById(area.dataset.wordCounter);
    if (!out) continue;
    const update = () => {
      const words = (area.value.match(/\S+/g) || []).length;
      out.textContent = `${words} of ${limit} words` + (words > limit ? ": over the limit" : "");
      out.classList.toggle("field-error", words > limit);
    };
    area.addEventListener("input", update);
    update();
  }
});
