/**
 * Ids that sort by creation: a prefix, the time in base-36 milliseconds (nine characters, enough
 * until the year 5188), then fourteen random base-36 characters.
 */
export function timeOrderedId(prefix: string): string {
  const random = [...crypto.getRandomValues(new Uint8Array(8))]
    .map((b) => b.toString(36).padStart(2, "0"))
    .join("")
    .slice(0, 14);
  return `${prefix}${Date.now().toString(36).padStart(9, "0")}${random}`;
}
