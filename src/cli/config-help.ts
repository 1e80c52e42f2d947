import { z } from 'zod';

type JsonSchema = {
  type?: string | string[];
  description?: string;
  default?: unknown;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
};

const show = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/**
 * Every field of a configuration schema, one line each, with its type, default and description,
 * for `--help`: what the user can write in the YAML or JSON file.
 */
export function describeConfigFields(schema: z.ZodType, prefix = ''): string[] {
  const root = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const lines: string[] = [];
  const typeOf = (node: JsonSchema): string => {
    if (node.enum) return node.enum.map(show).join(' | ');
    if (node.const !== undefined) return show(node.const);
    const options = node.anyOf ?? node.oneOf;
    if (options) return options.map(typeOf).join(' | ');
    if (Array.isArray(node.type)) return node.type.join(' | ');
    return node.type ?? 'any';
  };
  // A parent's default (a prefault such as the run's Searcher settings) overrides its fields' own.
  const walk = (node: JsonSchema, path: string, inherited?: unknown) => {
    const effective = inherited !== undefined ? inherited : node.default;
    const options = node.anyOf ?? node.oneOf;
    // A union of objects told apart by `type` (an adapter): each variant's fields under `path (type=…)`.
    const variants = options?.filter((o) => o.properties?.type?.const !== undefined) ?? [];
    if (variants.length > 0) {
      lines.push(
        `  ${path}.type  one of ${variants.map((v) => show(v.properties!.type!.const)).join(', ')}${node.default !== undefined ? ` (default ${show((node.default as { type?: unknown }).type ?? node.default)})` : ''}${node.description ? `  ${node.description}` : ''}`,
      );
      for (const variant of variants) {
        for (const [key, child] of Object.entries(variant.properties ?? {}))
          if (key !== 'type') walk(child, `${path}(${show(variant.properties!.type!.const)}).${key}`);
      }
      return;
    }
    if (node.properties && (node.type === 'object' || node.type === undefined)) {
      const given = effective && typeof effective === 'object' ? (effective as Record<string, unknown>) : {};
      for (const [key, child] of Object.entries(node.properties))
        walk(child, path ? `${path}.${key}` : key, given[key]);
      return;
    }
    if (node.type === 'array' && node.items?.properties) {
      lines.push(
        `  ${path}[]  a list${node.default !== undefined ? ` (default ${Array.isArray(node.default) ? `${node.default.length} entries` : show(node.default)})` : ''}${node.description ? `  ${node.description}` : ''}`,
      );
      walk(node.items, `${path}[]`);
      return;
    }
    const fallback = effective !== undefined ? ` (default ${show(effective)})` : '';
    lines.push(`  ${path}  ${typeOf(node)}${fallback}${node.description ? `  ${node.description}` : ''}`);
  };
  walk(root, prefix);
  return lines;
}
