// Controls marked data-auto-submit submit their form when changed (no inline handlers:
// the Content-Security-Policy allows only the app's own script files).
document.addEventListener("change", (event) => {
  const control = event.target.closest("[data-auto-submit]");
  if (control && control.form) control.form.submit();
});
