/**
 * A response body as text, read chunk by chunk while it stays within
 * `maxBytes`: null once it grows past them (leaving the loop cancels the
 * rest, so a huge body is neither drained nor held). A read that fails
 * throws as the stream does. For answers of other programs: bitcoind's RPC
 * and the price sources.
 */
export async function readBoundedText(body: AsyncIterable<Uint8Array> | null, maxBytes: number): Promise<string | null> {
  if (!body) return '';
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) return null;
    text += decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}
