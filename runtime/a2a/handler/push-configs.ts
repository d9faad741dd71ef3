/**
 * The request handler's push-notification config methods (set, get, list, delete), each on the
 * caller's own task only and within the push quotas (peers/push-limits.ts). Without push
 * (HandlerOptions.push) each is PushNotificationNotSupported.
 */
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig } from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { ownerKey } from '../tasks/task-record.ts';
import type { HandlerScope } from './scope.ts';

type PushConfigMethods = Pick<
  A2ARequestHandler,
  'createTaskPushNotificationConfig' | 'getTaskPushNotificationConfig' | 'listTaskPushNotificationConfigs' | 'deleteTaskPushNotificationConfig'
>;

export function pushConfigMethods(s: HandlerScope): PushConfigMethods {
  return {
    async createTaskPushNotificationConfig(params, context): Promise<TaskPushNotificationConfig> {
      const push = s.pushOf();
      await s.ownTask(params.taskId, context);
      s.quota.checkUrl(params.url);
      push.check(params);
      const cfg = { ...params, id: s.configId(params.id, params.taskId, context) ?? '' };
      // The store assigns cfg.id when it is still empty.
      await s.quota.save(push.store, cfg, context, ownerKey(context), s.pushes(params.taskId, context));
      return cfg;
    },
    async getTaskPushNotificationConfig(params, context): Promise<TaskPushNotificationConfig> {
      const push = s.pushOf();
      await s.ownTask(params.taskId, context);
      const id = s.configId(params.id, params.taskId, context);
      const found = (await push.store.load(params.taskId, context)).find((c) => c.id === id);
      if (!found)
        throw new TaskNotFoundError({ message: `no push notification config '${id}' on task '${params.taskId}'`, metadata: { taskId: params.taskId } });
      return found;
    },
    async listTaskPushNotificationConfigs(params, context): Promise<ListTaskPushNotificationConfigsResponse> {
      const push = s.pushOf();
      await s.ownTask(params.taskId, context);
      return { configs: await push.store.load(params.taskId, context), nextPageToken: '' };
    },
    async deleteTaskPushNotificationConfig(params, context): Promise<void> {
      const push = s.pushOf();
      await s.ownTask(params.taskId, context);
      const id = s.configId(params.id, params.taskId, context);
      await s.quota.delete(push.store, params.taskId, id, context, ownerKey(context), s.pushes(params.taskId, context));
    },
  };
}
