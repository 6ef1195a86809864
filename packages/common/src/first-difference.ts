/**
 * The first place where two JSON-like values differ, as a field path and both values
 * (`tasks[0].instances: 4, not 2`), or '' when they are equal. Objects are compared key by key in
 * sorted order, arrays element by element; a missing key counts as `undefined`.
 */
export function firstDifference(a: unknown, b: unknown, path = ''): string {
  if (Object.is(a, b)) return '';
  const show = (v: unknown): string => (v === undefined ? 'absent' : JSON.stringify(v).slice(0, 60));
  const at = path || '(the whole value)';
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
    return '';
  }
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const k of keys) {
      const d = firstDifference(a[k], b[k], path ? `${path}.${k}` : k);
      if (d) return d;
    }
    return '';
  }
  return `${at}: ${show(b)}, not ${show(a)}`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
