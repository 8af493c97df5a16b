import type { Intent, Reply, ServiceState } from './service-state.ts';
import { err } from './service-state.ts';

const STATUS_STEPS = ['pending', 'detected', 'minted', 'complete'] as const;
const MINTED = 2;

/** An intent's status now: forced, or pending → detected → minted → complete, one step per `statusStepMs`. */
export function statusOf(s: ServiceState, intent: Intent, now: number): string {
  if (intent.forced) return intent.forced;
  if (intent.kind === 'solana' && !intent.submitted) return now > intent.expiresAt ? 'failed' : 'pending';
  return STATUS_STEPS[stepOf(s, intent, now)] as string;
}

function stepOf(s: ServiceState, intent: Intent, now: number): number {
  const since = intent.kind === 'solana' && intent.submitted ? intent.submitted.at : intent.at;
  const step = s.config.statusStepMs <= 0 ? 3 : Math.floor((now - since) / s.config.statusStepMs);
  return Math.min(Math.max(step, 0), 3);
}

/**
 * `GET /sdk/v1/status/{id}`. An intent that has reached `minted` has paid its recipient on the
 * destination chain before the answer says so (the payment runs once).
 */
export async function status(s: ServiceState, id: string): Promise<Reply> {
  const intent = s.intents.get(id);
  if (!intent) return err(404, 'intent_not_found', 'no such intent');
  const st = statusOf(s, intent, Date.now());
  if (st === 'minted' || st === 'complete') await settle(s, intent);
  return { status: 200, body: { intent_id: id, status: st } };
}

/** Pays the recipient when the intent reaches `minted`, whether or not anyone asks for its status. */
export function scheduleSettlement(s: ServiceState, intent: Intent, from: number): void {
  const at = s.config.statusStepMs <= 0 ? from : from + MINTED * s.config.statusStepMs;
  const timer = setTimeout(
    () => {
      s.timers.delete(timer);
      if (s.intents.get(intent.id) !== intent) return; // reset since
      const st = statusOf(s, intent, Date.now());
      if (st === 'minted' || st === 'complete') void settle(s, intent).catch(() => {});
    },
    Math.max(0, at - Date.now()),
  );
  timer.unref();
  s.timers.add(timer);
}

/** The destination end of a transfer: mints the net amount to the recipient (EVM) or their USDC account (Solana), once. */
export function settle(s: ServiceState, intent: Intent): Promise<void> {
  if (!intent.payout) return Promise.resolve();
  if (intent.settling) return intent.settling;
  const { to, recipient, amount } = intent.payout;
  const run = async () => {
    const tx =
      to === 'SOLANA' ? await s.solana.pay(recipient, amount) : await s.evm[to].pay(recipient, amount);
    if (intent.ledger) intent.ledger.destination_tx = tx;
  };
  intent.settling = run().catch((e: unknown) => {
    // A failed payment may be tried again by the next status read.
    intent.settling = null;
    throw e;
  });
  return intent.settling;
}
