import type { Evidence } from '../ports/types';

/** One part of a vendor message built from evidence: a text, or an image as base64. */
export type EvidencePart =
  | { type: 'text'; text: string }
  | { type: 'image'; mimeType: string; base64: string };

/**
 * The Generator's input in a vendor-neutral form: the question, then each evidence item with a
 * label, as an image where the vendor can read its format, else as its text.
 */
export function evidenceParts(
  question: string,
  evidence: readonly Evidence[],
  sendableMimeTypes: ReadonlySet<string>,
): EvidencePart[] {
  const parts: EvidencePart[] = [{ type: 'text', text: `Question: ${question}` }];
  evidence.forEach((item, i) => {
    const label =
      item.kind === 'crop'
        ? `Evidence ${i + 1}: enlarged crop of ${item.basename}`
        : `Evidence ${i + 1}: page ${item.basename}`;
    if (item.image && sendableMimeTypes.has(item.image.mimeType)) {
      parts.push({ type: 'text', text: label });
      parts.push({
        type: 'image',
        mimeType: item.image.mimeType,
        base64: Buffer.from(item.image.bytes).toString('base64'),
      });
    } else {
      parts.push({
        type: 'text',
        text: `${label}${item.text ? `\n${item.text}` : ' (no readable content)'}`,
      });
    }
  });
  return parts;
}
