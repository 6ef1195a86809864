// Original file: proto/fuxi/v1/common.proto

import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';
import type { Command as _fuxi_v1_Command, Command__Output as _fuxi_v1_Command__Output } from '../../fuxi/v1/Command.js';
import type { LocalityHint as _fuxi_v1_LocalityHint, LocalityHint__Output as _fuxi_v1_LocalityHint__Output } from '../../fuxi/v1/LocalityHint.js';

export interface TaskSpec {
  'name'?: (string);
  'instances'?: (number);
  'resource'?: (_fuxi_v1_Resource | null);
  'command'?: (_fuxi_v1_Command | null);
  'maxAttempts'?: (number);
  'dependsOn'?: (string)[];
  'locality'?: (_fuxi_v1_LocalityHint | null);
  'priority'?: (number);
  /**
   * Gang scheduling: slots are granted, and instances started, min_instances at a time (all or
   * nothing per scheduling pass). 0 = no gang; the job file's `gang: true` = instances.
   */
  'minInstances'?: (number);
}

export interface TaskSpec__Output {
  'name': (string);
  'instances': (number);
  'resource': (_fuxi_v1_Resource__Output | null);
  'command': (_fuxi_v1_Command__Output | null);
  'maxAttempts': (number);
  'dependsOn': (string)[];
  'locality': (_fuxi_v1_LocalityHint__Output | null);
  'priority': (number);
  /**
   * Gang scheduling: slots are granted, and instances started, min_instances at a time (all or
   * nothing per scheduling pass). 0 = no gang; the job file's `gang: true` = instances.
   */
  'minInstances': (number);
}
