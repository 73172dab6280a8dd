// The one way to turn anything a `catch` receives into words. JavaScript can
// throw any value, so a catch block's `err` is `unknown`: an Error gives its
// message, anything else its string form. Every sentence that wraps a caught
// failure ("cannot read the key: …") goes through here, so that all of them
// word it the same way, without the stack. (A thrown plain object still reads
// "[object Object]": that is its string form, and nothing here hides it.)

/** The message of any thrown value, for wrapping it into a sentence. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
