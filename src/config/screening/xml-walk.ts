import { createReadStream } from 'node:fs';
import { SaxesParser } from 'saxes';

/*
 * A streaming walk over an XML file (OFAC's files are tens of MB): elements are seen as they open
 * and close, never kept. Names are local (a namespace prefix dropped); a closing element's text is
 * what it held directly since it opened (what its leaf elements carry).
 */

/** What a walk reports, element by element. */
export type XmlVisitor = {
  open?(name: string, attributes: Readonly<Record<string, string>>, path: readonly string[]): void;
  /** `path` holds the element's ancestors, outermost first (the element itself not included). */
  close?(name: string, text: string, path: readonly string[]): void;
};

const localName = (name: string): string => name.slice(name.indexOf(':') + 1);

/** Walks the file; rejects with the parser's message (line and column) when it is not well-formed XML. */
export async function walkXml(path: string, visitor: XmlVisitor): Promise<void> {
  const parser = new SaxesParser({ position: true });
  const stack: string[] = [];
  let text = '';
  let failure: Error | undefined;
  parser.on('error', (err) => {
    failure ??= err;
  });
  parser.on('opentag', (tag) => {
    const name = localName(tag.name);
    visitor.open?.(name, tag.attributes as Record<string, string>, stack);
    stack.push(name);
    text = '';
  });
  parser.on('text', (t) => (text += t));
  parser.on('cdata', (t) => (text += t));
  parser.on('closetag', (tag) => {
    stack.pop();
    visitor.close?.(localName(tag.name), text.trim(), stack);
    text = '';
  });
  for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: 256 * 1024 })) {
    parser.write(chunk as string);
    if (failure) throw failure;
  }
  parser.close();
  if (failure) throw failure;
}
