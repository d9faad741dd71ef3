/** Small builders for OpenAPI v3 (structural) schemas of apiextensions.k8s.io/v1 CRDs. */

export interface Validation {
  rule: string;
  message?: string;
  messageExpression?: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export interface Schema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: Schema;
  enum?: string[];
  default?: unknown;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-validations'?: Validation[];
  anyOf?: Schema[];
}

type Extra = Omit<Schema, 'type' | 'description'>;

export const str = (description: string, extra: Extra = {}): Schema => ({ type: 'string', description, ...extra });
export const int = (description: string, extra: Extra = {}): Schema => ({ type: 'integer', description, ...extra });
export const num = (description: string, extra: Extra = {}): Schema => ({ type: 'number', description, ...extra });
export const bool = (description: string, extra: Extra = {}): Schema => ({ type: 'boolean', description, ...extra });
export const arr = (description: string, items: Schema, extra: Extra = {}): Schema => ({ type: 'array', description, items, ...extra });
export const obj = (description: string, properties: Record<string, Schema>, extra: Extra = {}): Schema => ({
  type: 'object',
  description,
  properties,
  ...extra,
});
export const enm = (description: string, values: readonly string[], extra: Extra = {}): Schema => ({
  type: 'string',
  description,
  enum: [...values],
  ...extra,
});
export const map = (description: string, values: Schema): Schema => ({ type: 'object', description, additionalProperties: values });

/** A free-form object (kept as given, no schema). */
export const freeform = (description: string): Schema => ({ type: 'object', description, 'x-kubernetes-preserve-unknown-fields': true });

export const DNS_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

export const labelSelector = (description: string): Schema =>
  obj(description, {
    matchLabels: map('Labels that must all match.', str('Label value.')),
    matchExpressions: arr(
      'Set-based requirements.',
      obj(
        'A label selector requirement.',
        {
          key: str('Label key.'),
          operator: enm('Relation of key to values.', ['In', 'NotIn', 'Exists', 'DoesNotExist']),
          values: arr('Values for In/NotIn.', str('A value.'), { maxItems: 64 }),
        },
        { required: ['key', 'operator'] },
      ),
      { maxItems: 16 },
    ),
  });

export const quantity = (description: string): Schema => ({
  description,
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  'x-kubernetes-int-or-string': true,
  pattern: '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
});
