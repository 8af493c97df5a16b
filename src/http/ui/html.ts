/*
 * HTML for the batch pages, escaped by default: the `html` tag escapes every interpolated value
 * unless it is already `Html` (made by this tag), so a memo, an error message or a recipient from
 * outside can only ever be text on the page, never markup. The only other way to make `Html` is
 * `constantMarkup`, for the code's own constants (the stylesheet).
 */

import { escapeControlCharacters } from '../../domain/text.ts';

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Text as HTML text or attribute value (quoted attributes only, as every template here writes them).
 * Control, bidirectional and zero-width characters (refused in input since, but possibly stored
 * before) are shown as visible escapes (`\u202e`): they would otherwise reorder or hide text.
 */
export function escapeHtml(text: string): string {
  return escapeControlCharacters(text, { keepNewlines: true }).replace(
    /[&<>"']/g,
    (c) => HTML_ESCAPES[c] ?? c,
  );
}

/** Markup this module made; the only values the `html` tag does not escape. */
export class Html {
  readonly #markup: string;
  constructor(markup: string, key: typeof MADE_HERE) {
    if (key !== MADE_HERE) throw new TypeError('Html is made by the html tag only');
    this.#markup = markup;
  }
  toString(): string {
    return this.#markup;
  }
}
const MADE_HERE = Symbol('html');

/** A value the tag accepts: text (escaped), numbers, markup, nothing (null, undefined, false), or a list. */
export type HtmlValue = string | number | bigint | Html | null | undefined | false | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.toString();
  if (Array.isArray(value)) return value.map((v: HtmlValue) => render(v)).join('');
  return escapeHtml(String(value));
}

/** `html\`<td>${memo}</td>\``: the literal parts as markup, every value escaped (see HtmlValue). */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): Html {
  let out = strings[0] ?? '';
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? '');
  });
  return new Html(out, MADE_HERE);
}

/** Markup written in this code (a constant such as the stylesheet); never pass it outside text. */
export function constantMarkup(markup: string): Html {
  return new Html(markup, MADE_HERE);
}

/**
 * A URL path with a query, for an `href`: each part percent-encoded (and the whole escaped again
 * by the tag where it is interpolated).
 */
export function pathWithQuery(path: string, query: Readonly<Record<string, string | undefined>>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, v);
  const q = params.toString();
  return q ? `${path}?${q}` : path;
}
