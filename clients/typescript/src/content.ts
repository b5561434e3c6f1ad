// A message's content is a string or an array of parts (text, image,
// thinking, …), given back by compactd exactly as it was sent.

import type { Content, Part } from './generated/types';

/** The text of a content: the string, or its text parts joined by lines. */
export function contentText(content: Content | undefined | null): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content
    .filter((part: Part) => part.type === 'text' && typeof part.text === 'string')
    .map((part: Part) => part.text as string)
    .join('\n');
}
