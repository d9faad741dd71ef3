import { arr, enm, int, obj, str, type Schema } from './schema.ts';

export const conditionsSchema = (description = 'Standard conditions: Ready, Progressing, Degraded.'): Schema =>
  arr(
    description,
    obj(
      'One condition.',
      {
        type: str('Condition type.', { maxLength: 316 }),
        status: enm('True, False or Unknown.', ['True', 'False', 'Unknown']),
        reason: str('CamelCase reason.', { maxLength: 1024 }),
        message: str('Human-readable detail.', { maxLength: 32768 }),
        observedGeneration: int('Generation the condition was computed for.', { format: 'int64', minimum: 0 }),
        lastTransitionTime: str('When the status last changed.', { format: 'date-time' }),
      },
      { required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'] },
    ),
    { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'], maxItems: 16 },
  );
