/**
 * The relative links of a markdown page: markdown links and HTML src/href attributes outside code, without
 * absolute URLs. Used by docs-links.test.ts (against the repository) and by .ci/package-check.ts (against the
 * packed tarball, where only what package.json "files" ships is there).
 */
export function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  const found = [
    ...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g),
    ...prose.matchAll(/(?:src|href)="([^"]+)"/g),
  ].map((m) => m[1]!);
  return found.filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}
