/**
 * The package's public types as the TypeScript compiler sees them from its two entry points (lib/index.ts,
 * lib/client/index.ts, what TypeDoc documents): every property path of every exported type, with its TSDoc.
 * The docs checks hold the option names of the guides and the defaults of lib/defaults.ts to these.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const ENTRY_POINTS = ['lib/index.ts', 'lib/client/index.ts'];

export interface PublicProperty {
  /** The exported type it is found in, e.g. `NetAuthOptions`. */
  owner: string;
  /** Its path from that type, e.g. `lifetimes.code`. */
  path: string;
  /** Its TSDoc text ('' when it has none), block tags left out. */
  doc: string;
  /** Its TSDoc block tags' texts by name (`defaultValue`, `see`: several joined by a new line). */
  tags: Record<string, string>;
  /** Whether it is declared in an inline object type (an option's nested fields) rather than a named type. */
  inline: boolean;
}

function isOwnDeclaration(symbol: ts.Symbol | undefined): boolean {
  return (symbol?.declarations ?? []).some((d) => {
    const file = d.getSourceFile().fileName;
    return file.startsWith(join(ROOT, 'lib')) && !file.includes('node_modules');
  });
}

/** Every property path of every exported type of the two entry points (object types of lib/ only). */
export function publicProperties(): PublicProperty[] {
  const options: ts.CompilerOptions = {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
    skipLibCheck: true,
    noEmit: true,
  };
  const program = ts.createProgram({ rootNames: ENTRY_POINTS.map((e) => join(ROOT, e)), options });
  const checker = program.getTypeChecker();
  const out: PublicProperty[] = [];

  const walk = (owner: string, type: ts.Type, prefix: string, seen: Set<ts.Type>): void => {
    if (seen.has(type) || seen.size > 6) return;
    const members = type.isUnion() || type.isIntersection() ? type.types : [type];
    for (const member of members) {
      if (checker.isArrayType(member)) {
        const [element] = checker.getTypeArguments(member as ts.TypeReference);
        if (element) walk(owner, element, prefix, new Set([...seen, type]));
        continue;
      }
      if (!(member.flags & ts.TypeFlags.Object)) continue;
      const symbol = member.getSymbol() ?? member.aliasSymbol;
      // Only the package's own object types: a JWK or an Express Request is not documented here.
      if (symbol && symbol.name !== '__type' && symbol.name !== '__object' && !isOwnDeclaration(symbol)) continue;
      for (const property of checker.getPropertiesOfType(member)) {
        if (!isOwnDeclaration(property)) continue;
        const path = prefix === '' ? property.name : `${prefix}.${property.name}`;
        const declaration = property.declarations?.[0];
        const inline = declaration !== undefined && ts.isTypeLiteralNode(declaration.parent);
        const doc = ts.displayPartsToString(property.getDocumentationComment(checker));
        const tags: Record<string, string> = {};
        for (const tag of property.getJsDocTags(checker)) {
          const text = ts.displayPartsToString(tag.text);
          tags[tag.name] = tag.name in tags ? `${tags[tag.name]}\n${text}` : text;
        }
        out.push({ owner, path, doc, tags, inline });
        if (declaration)
          walk(owner, checker.getTypeOfSymbolAtLocation(property, declaration), path, new Set([...seen, type]));
      }
    }
  };

  for (const entry of ENTRY_POINTS) {
    const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(join(ROOT, entry))!)!;
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      if (!(symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class))) continue;
      walk(exported.name, checker.getDeclaredTypeOfSymbol(symbol), '', new Set());
    }
  }
  return out;
}

/** Every name a doc may use for a property: each path, and each of its tails (`lifetimes.code`, `code`). */
export function knownNames(properties: PublicProperty[]): Set<string> {
  const names = new Set<string>();
  for (const { path } of properties) {
    const parts = path.split('.');
    for (let i = 0; i < parts.length; i++) names.add(parts.slice(i).join('.'));
  }
  return names;
}
