"""Accessibility checks for any page in the browser tests: axe-core (the copy that
axe-playwright-python ships, loaded into the page), id references, and focus outlines."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import axe_playwright_python

SERIOUS = ("serious", "critical")


@cache
def _axe_source() -> str:
    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text()


def _load_axe(page) -> None:
    # page.evaluate runs outside the page's Content-Security-Policy, which allows no
    # injected script tags.
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(_axe_source())


def serious_axe_violations(page) -> list[str]:
    _load_axe(page)
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    found = []
    for violation in result["violations"]:
        if violation["impact"] not in SERIOUS:
            continue
        for node in violation["nodes"]:
            summary = (node.get("failureSummary") or violation["help"]).replace("\n", " ")
            found.append(f"{violation['id']} at {node['target']}: {summary}")
    return found


MISSING_IDS = """() => {
  const names = ["aria-describedby", "aria-labelledby", "aria-controls"];
  const missing = [];
  for (const element of document.querySelectorAll(names.map((n) => `[${n}]`).join(","))) {
    for (const name of names) {
      for (const id of (element.getAttribute(name) || "").split(/\\s+/).filter(Boolean)) {
        if (document.getElementById(id)) continue;
        missing.push(`${name}="${id}" on ${element.outerHTML.slice(0, 80)}`);
      }
    }
  }
  return missing;
}"""


def missing_id_references(page) -> list[str]:
    """aria-describedby / aria-labelledby / aria-controls naming an id the page lacks."""
    return list(page.evaluate(MISSING_IDS))


def assert_no_serious_axe_violations(page) -> None:
    """Fails listing every serious or critical axe-core finding and every dangling id."""
    problems = serious_axe_violations(page) + missing_id_references(page)
    assert not problems, f"{page.url}:\n" + "\n".join(problems)


# WCAG 2.2 contrast ratio of the focused element's outline against what lies behind it
# (the outline is drawn outside the element when outline-offset >= 0).
FOCUS_OUTLINE = """() => {
  const element = document.activeElement;
  if (!element || element === document.body) return null;
  const style = getComputedStyle(element);
  const describe = element.outerHTML.slice(0, 80);
  if (style.outlineStyle === "none" || parseFloat(style.outlineWidth) < 2) {
    return {element: describe, ratio: 0, outline: style.outlineStyle + " " + style.outlineWidth};
  }
  const rgb = (text) => text.match(/[\\d.]+/g).map(Number);
  const luminance = ([r, g, b]) => {
    const [R, G, B] = [r, g, b].map((c) => {
      c /= 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * R + 0.7152 * G + 0.0722 * B;
  };
  let behind = parseFloat(style.outlineOffset) >= 0 ? element.parentElement : element;
  let background = "rgb(255, 255, 255)";
  for (; behind; behind = behind.parentElement) {
    const colour = getComputedStyle(behind).backgroundColor;
    const parts = rgb(colour);
    if (parts.length < 4 || parts[3] > 0) { background = colour; break; }
  }
  const [a, b] = [luminance(rgb(style.outlineColor)), luminance(rgb(background))];
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  return {element: describe, ratio, outline: style.outlineColor, background};
}"""


def weak_focus_outlines(page, *, stops: int = 12) -> list[str]:
    """Tabs through the first `stops` controls from the top of the page; lists each whose
    :focus-visible outline is missing or under 3:1 against its background."""
    page.locator("body").focus()
    page.evaluate("document.activeElement && document.activeElement.blur()")
    weak = []
    for _ in range(stops):
        page.keyboard.press("Tab")
        seen = page.evaluate(FOCUS_OUTLINE)
        if seen is not None and seen["ratio"] < 3:
            weak.append(f"{seen['element']}: {seen['outline']} on {seen.get('background')}")
    return weak
