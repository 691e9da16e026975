/** Normalises the date forms documents carry (PDF `D:YYYYMMDDHHmmSSOHH'mm'`, W3CDTF, RFC 2822) to ISO 8601. */
export function toIsoDate(raw: unknown): string | undefined {
  if (raw instanceof Date) return Number.isNaN(raw.getTime()) ? undefined : raw.toISOString();
  if (typeof raw !== 'string' || raw.trim() === '') return undefined;
  const s = raw.trim();
  const pdf = /^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(Z|[+-]\d{2}'?\d{2}'?|[+-]\d{2})?/.exec(s);
  if (pdf) {
    const [, y, mo = '01', d = '01', h = '00', mi = '00', se = '00', tz] = pdf;
    const zone =
      !tz || tz.startsWith('Z') ? 'Z' : `${tz.slice(0, 3)}:${tz.slice(3).replaceAll("'", '').padEnd(2, '0')}`;
    return checked(`${y}-${mo}-${d}T${h}:${mi}:${se}${zone}`);
  }
  return checked(s);
}

function checked(s: string): string | undefined {
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
}
