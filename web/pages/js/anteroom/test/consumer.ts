// consumer.ts is an app that uses the package's types; `npm run typecheck`
// (and Go's TestClientPackageTypes) compiles it without emitting. The
// lines marked as expected errors fail the check if the types stop
// catching them, e.g. if the declarations degraded to any.
import { Anteroom, AnteroomError, backoffMs, type ClaimResult, type RetryInfo, type Status } from "@anteroom/client";

export async function buy(show: (position: number | null, eta: number) => void): Promise<string | null> {
  const retries: RetryInfo[] = [];
  const room = new Anteroom("spring-drop", {
    baseURL: "https://queue.shop.example",
    headers: {"X-User-Token": "…"},
    storage: localStorage,
    timeoutMs: 10_000,
    onRetry: (i) => { retries.push(i); },
  });
  const joined = await room.join();
  const ticket: string = joined.ticket;
  const turn: Status = await room.waitForTurn({onUpdate: (s) => show(s.position, s.eta_seconds)});
  if (!turn.admission_token) return ticket;
  const res: ClaimResult = await room.claim(turn.admission_token);
  if (res.status === 201 || res.status === 200) {
    const mine = await room.claims();
    return mine.find((c) => c.claim_id === res.body.claim_id)?.status ?? null;
  }
  if (res.body.code === "limit_reached") return res.body.claim_ids?.[0] ?? null;
  try {
    await room.release(res.body.claim_id ?? "");
  } catch (e) {
    if (e instanceof AnteroomError) return e.code + " " + e.status;
  }
  const wait: number = backoffMs(3, retries.length);
  return String(wait);
}

export function misuse(room: Anteroom): void {
  // @ts-expect-error: an event id is a string
  new Anteroom(42);
  // @ts-expect-error: onRetry is told a RetryInfo, which has no code
  new Anteroom("x", {onRetry: (i) => i.code});
  // @ts-expect-error: claim needs the admission token
  void room.claim();
  // @ts-expect-error: a status has no claim_id
  void room.waitForTurn().then((s) => s.claim_id);
}
