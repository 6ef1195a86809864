// Original file: proto/fuxi/v1/master.proto

import type { SlotReturn as _fuxi_v1_SlotReturn, SlotReturn__Output as _fuxi_v1_SlotReturn__Output } from '../../fuxi/v1/SlotReturn.js';
import type { Long } from '@grpc/proto-loader';

export interface ReturnSlotsRequest {
  'appId'?: (string);
  'amAttempt'?: (number);
  'seq'?: (number | string | Long);
  'returns'?: (_fuxi_v1_SlotReturn)[];
}

export interface ReturnSlotsRequest__Output {
  'appId': (string);
  'amAttempt': (number);
  'seq': (string);
  'returns': (_fuxi_v1_SlotReturn__Output)[];
}
