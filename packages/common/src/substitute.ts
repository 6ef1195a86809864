/** `${name}` substitution in worker commands. Unknown names are left as they are. */
export function substitute(text: string, vars: Readonly<Record<string, string | number>>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) => {
    const v = vars[name];
    return v === undefined ? whole : String(v);
  });
}
