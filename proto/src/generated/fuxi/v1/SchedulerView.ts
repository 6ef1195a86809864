// Original file: proto/fuxi/v1/scheduler.proto

import type { HostState as _fuxi_v1_HostState, HostState__Output as _fuxi_v1_HostState__Output } from '../../fuxi/v1/HostState.js';
import type { PendingRequest as _fuxi_v1_PendingRequest, PendingRequest__Output as _fuxi_v1_PendingRequest__Output } from '../../fuxi/v1/PendingRequest.js';
import type { HistoryEntry as _fuxi_v1_HistoryEntry, HistoryEntry__Output as _fuxi_v1_HistoryEntry__Output } from '../../fuxi/v1/HistoryEntry.js';
import type { Long } from '@grpc/proto-loader';

export interface SchedulerView {
  /**
   * Each view's version; a placement names the version it was decided on.
   */
  'version'?: (number | string | Long);
  /**
   * True: the whole state (hosts, pending); otherwise hosts and requests that changed since the
   * previous view, `removed_*` naming what is gone.
   */
  'full'?: (boolean);
  'hosts'?: (_fuxi_v1_HostState)[];
  'pending'?: (_fuxi_v1_PendingRequest)[];
  'removedHosts'?: (string)[];
  /**
   * "<app_id>/<unit>" of requests no longer pending.
   */
  'removedPending'?: (string)[];
  /**
   * History since the previous view (bounded: at most the last 1,000 entries).
   */
  'history'?: (_fuxi_v1_HistoryEntry)[];
}

export interface SchedulerView__Output {
  /**
   * Each view's version; a placement names the version it was decided on.
   */
  'version': (string);
  /**
   * True: the whole state (hosts, pending); otherwise hosts and requests that changed since the
   * previous view, `removed_*` naming what is gone.
   */
  'full': (boolean);
  'hosts': (_fuxi_v1_HostState__Output)[];
  'pending': (_fuxi_v1_PendingRequest__Output)[];
  'removedHosts': (string)[];
  /**
   * "<app_id>/<unit>" of requests no longer pending.
   */
  'removedPending': (string)[];
  /**
   * History since the previous view (bounded: at most the last 1,000 entries).
   */
  'history': (_fuxi_v1_HistoryEntry__Output)[];
}
