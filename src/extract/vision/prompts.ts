import { HYBRID_PROFILES, VISION_PROFILES, type VisionProfile } from '../../config/extraction.js';

export { HYBRID_PROFILES, VISION_PROFILES, type VisionProfile };

/** The profile `vision-llm` uses when none is asked for. */
export const DEFAULT_PROFILE = 'general';

/** Whether a caller may ask for `profile` (the hybrid engine's own profiles are not for callers). */
export function isPublicProfile(profile: string): profile is (typeof VISION_PROFILES)[number] {
  return (VISION_PROFILES as readonly string[]).includes(profile);
}

export interface PromptOptions {
  /** Pages sent with the prompt. */
  pages: number;
  /** `VISION_LLM_LANGUAGE_HINT`, e.g. `Danish`. */
  languageHint?: string | undefined;
  /** Labels read from the document itself (`diagram-topology`): the model must use them verbatim. */
  labels?: readonly string[] | undefined;
}

/** At most this much of a document's own labels goes into a prompt. */
const MAX_LABEL_CHARS = 20_000;

const TASKS: Record<VisionProfile, string> = {
  general: [
    'Transcribe the whole document as faithful GitHub-flavoured Markdown, page after page, in reading order (follow columns).',
    'Headings become #-headings by their level, lists stay lists, tables become Markdown tables with every cell.',
    'Where a figure, chart or diagram appears, describe what it shows in one sentence in square brackets and transcribe the text in it.',
    'Leave out running headers, footers and page numbers. Answer with the Markdown only: no preamble, no comments, no code fence around it.',
  ].join(' '),
  diagram: [
    'The pages show a process diagram (a flowchart or a swimlane diagram). Describe it in Markdown:',
    'a "## Lanes" section listing the lanes (roles, departments or systems);',
    'a "## Phases" section with the phases in order;',
    'a "## Steps" section listing, phase by phase and in order, every step with the lane that performs it, and every decision with its outcomes and where each leads;',
    'then a "## Flowchart" section with one Mermaid flowchart of the whole process in a ```mermaid fenced block: one node per step or decision, edges following the arrows with their labels, one subgraph per lane.',
    'Use the labels exactly as written in the diagram. Transcribe any other text on the pages below, as Markdown. No comments.',
  ].join(' '),
  ocr: [
    'Transcribe all text on the pages as plain text, exactly as printed, in reading order, page after page.',
    'No Markdown, no descriptions of images, no comments.',
  ].join(' '),
  'diagram-topology': [
    'The pages show a flowchart drawn with shapes and connectors. The labels of its shapes were read from the document itself and are listed below; they are exact.',
    'Answer with one Mermaid flowchart in a ```mermaid fenced block giving its structure: one node per shape, edges following the arrows (with their labels, if any), lanes or groups as subgraphs.',
    'Use the listed labels verbatim as node text, never your own wording. Do not transcribe other text and add nothing outside the block.',
  ].join(' '),
  figure: [
    'The pages contain a diagram pasted as a picture: its labels are pixels, not text.',
    'Answer with one Mermaid flowchart in a ```mermaid fenced block reproducing it: one node per box or decision with its label transcribed exactly as written, edges following the arrows with their labels, lanes or groups as subgraphs.',
    'Below the block, list any text of the figure that the graph does not hold (a legend, notes). Nothing else.',
  ].join(' '),
};

/**
 * The text part of a vision call for `profile`. Every profile tells the model to keep the source
 * language verbatim (no translation, no summary): the output is indexed and quoted back.
 */
export function visionPrompt(profile: VisionProfile, o: PromptOptions): string {
  const pages = o.pages === 1 ? 'one page image' : `${o.pages} page images, in order,`;
  const language = o.languageHint
    ? `The document is written in ${o.languageHint}. Keep every word in ${o.languageHint} exactly as written: do not translate, summarise or correct anything.`
    : "Keep every word in the document's own language exactly as written: do not translate, summarise or correct anything.";
  const parts = [`You are given ${pages} of one document.`, TASKS[profile], language];
  if (profile === 'diagram-topology' && o.labels && o.labels.length > 0) {
    let budget = MAX_LABEL_CHARS;
    const lines: string[] = [];
    for (const label of o.labels) {
      budget -= label.length + 3;
      if (budget < 0) break;
      lines.push(`- ${label}`);
    }
    parts.push(`Labels:\n${lines.join('\n')}`);
  }
  return parts.join('\n\n');
}
