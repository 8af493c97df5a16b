import { html, type Html } from './html.ts';
import { pageShell } from './page-shell.ts';

/** A refusal or a missing batch, for a person: what went wrong and the way back. */
export function errorPage(status: number, message: string): Html {
  const body = html`<h1>${status === 404 ? 'Not found' : 'Cannot show this page'}</h1>
    <div class="panel" data-error="${status}">${message}</div>
    <p><a href="/ui">← all batches</a></p>`;
  return pageShell({ title: status === 404 ? 'Not found' : 'Error', body });
}
