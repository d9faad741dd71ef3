/**
 * One call of a kit's inference driver (the real component in the runtime's component host), as
 * the driver tests make it: the request JSON in, the parsed tool-result out, and the text and
 * thinking chunks the driver emitted on the way, in order.
 */
import { parseToolResult } from '../../runtime/tools/result.ts';
import type { Kit } from '../loop/kit.ts';

export type Chunk = ['text' | 'thinking', string];

export async function callDriverOnce(k: Kit, data: string) {
  const chunks: Chunk[] = [];
  k.session.components.io = { textChunk: (s) => chunks.push(['text', s]), thinkingChunk: (s) => chunks.push(['thinking', s]) };
  const driver = await k.session.components.driver();
  const result = parseToolResult(await driver.call(['run', 'run'], [{ data, logPath: undefined }]));
  return { result, data: JSON.parse(result.data ?? 'null') as Record<string, unknown>, raw: result.data ?? '', chunks };
}
