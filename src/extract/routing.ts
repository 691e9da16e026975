import type { ExtractionSettings } from '../config/extraction.js';
import type { DiagramSignals } from './docx-layout.js';
import type { RouteSignal } from './extractor.js';

/** The `EXTRACTION_ROUTER_*` thresholds. */
export interface RouterThresholds {
  minTextboxes: number;
  drawingRatio: number;
  minBodyImages: number;
  minImageEmu: number;
  /** 0 disables the guard. */
  minImageWordRatio: number;
}

export function routerThresholds(s: ExtractionSettings): RouterThresholds {
  return {
    minTextboxes: s.EXTRACTION_ROUTER_MIN_TEXTBOXES,
    drawingRatio: s.EXTRACTION_ROUTER_DRAWING_RATIO,
    minBodyImages: s.EXTRACTION_ROUTER_MIN_BODY_IMAGES,
    minImageEmu: s.EXTRACTION_ROUTER_MIN_IMAGE_EMU,
    minImageWordRatio: s.EXTRACTION_ROUTER_MIN_IMAGE_WORD_RATIO,
  };
}

export interface SignalVerdict {
  /** Signal one: a flowchart drawn with shapes and text boxes. */
  vector: boolean;
  /** Signal two: a large picture (a pasted diagram). */
  raster: boolean;
  /** Words in text boxes per body word (body words counted as at least 1). */
  drawingRatio: number;
  /** Largest picture area (squared EMU) per body word (body words counted as at least 1). */
  imageWordRatio: number;
  /** The signal that decides the route: the vector one first. */
  signal: Exclude<RouteSignal, 'not-docx'>;
}

/**
 * The two routing signals of a DOCX (docs/extraction.md):
 * one, a vector flowchart: shapes ≥ `minTextboxes` and text-box words per body word ≥
 * `drawingRatio`; two, a raster figure: pictures ≥ `minBodyImages` and the largest displayed ≥
 * `minImageEmu` (and, with a non-zero `minImageWordRatio`, that area per body word at least that:
 * a long report with one large photo stays a report).
 */
export function judgeSignals(s: DiagramSignals, t: RouterThresholds): SignalVerdict {
  const words = Math.max(1, s.bodyWords);
  const drawingRatio = s.drawingWords / words;
  const imageWordRatio = s.largestImageEmu / words;
  const vector = s.shapes >= t.minTextboxes && drawingRatio >= t.drawingRatio;
  const raster =
    s.bodyImages >= t.minBodyImages &&
    s.largestImageEmu >= t.minImageEmu &&
    (t.minImageWordRatio === 0 || imageWordRatio >= t.minImageWordRatio);
  return {
    vector,
    raster,
    drawingRatio,
    imageWordRatio,
    signal: vector ? 'vector-flowchart' : raster ? 'raster-figure' : 'none',
  };
}
