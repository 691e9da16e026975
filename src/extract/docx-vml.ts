/** Lengths and positions of VML shapes (the legacy drawing markup some DOCX files still carry), in EMU. */

const EMU_PER_PT = 12_700;

/** A VML length (`12pt`, `1.5in`, `2cm`, `30mm`, `96px`, bare = px) in EMU. */
function vmlLength(value: string | undefined): number | undefined {
  const m = /^\s*(-?[\d.]+)\s*(pt|in|cm|mm|px)?\s*$/.exec(value ?? '');
  if (!m) return undefined;
  const n = Number(m[1]);
  if (!Number.isFinite(n)) return undefined;
  const per = { pt: EMU_PER_PT, in: 914_400, cm: 360_000, mm: 36_000, px: 9_525 }[m[2] ?? 'px'] ?? 9_525;
  return n * per;
}

function vmlStyle(style: string): Map<string, string> {
  return new Map(
    style
      .split(';')
      .map((d) => d.split(':').map((s) => s.trim().toLowerCase()))
      .filter((d): d is [string, string] => d.length === 2 && d[0] !== '' && d[1] !== ''),
  );
}

export function vmlSize(style: string): { cx: number; cy: number } | undefined {
  const s = vmlStyle(style);
  const cx = vmlLength(s.get('width'));
  const cy = vmlLength(s.get('height'));
  return cx !== undefined && cy !== undefined ? { cx: Math.max(0, cx), cy: Math.max(0, cy) } : undefined;
}

export function vmlPosition(style: string): { x: number; y: number } {
  const s = vmlStyle(style);
  return {
    x: vmlLength(s.get('margin-left') ?? s.get('left')) ?? 0,
    y: vmlLength(s.get('margin-top') ?? s.get('top')) ?? 0,
  };
}
