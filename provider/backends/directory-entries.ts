// The shard directory's entries as every store keeps them (a name -> its shard),
// and the one step that is the same whatever holds them: a claim. The stores
// (file/directory-store.ts, object-stores.ts) apply it under their lock or in
// their compare-and-swap loop.

/** `claim`'s step: `shard` written where a name has none; the names another shard holds; whether anything was written. */
export function claimEntries(groups: Readonly<Record<string, number>>, names: readonly string[], shard: number): { groups: Record<string, number>; elsewhere: Map<string, number>; fresh: boolean } {
  const next = { ...groups };
  const elsewhere = new Map<string, number>();
  let fresh = false;
  for (const name of names) {
    const known = next[name];
    if (known === undefined) {
      next[name] = shard;
      fresh = true;
    } else if (known !== shard) elsewhere.set(name, known);
  }
  return { groups: next, elsewhere, fresh };
}
