// Original file: proto/fuxi/v1/master.proto

import type { JobSpec as _fuxi_v1_JobSpec, JobSpec__Output as _fuxi_v1_JobSpec__Output } from '../../fuxi/v1/JobSpec.js';

export interface SubmitJobsRequest {
  'specs'?: (_fuxi_v1_JobSpec)[];
  /**
   * Check, do not submit (Kubernetes' dryRun): every admission check a real submit of this batch
   * would run (spec, limits, quota group, testbed, job array owner and limit, an id a job and a job
   * array would share, an existing id), each job checked after the ones before it as if they had
   * been taken; nothing is written and no submit rate is charged. Each result is the verdict the
   * real submit would get now: `created` means the job would be created. A job without an id is
   * checked under one the master makes and answered with job_id ''.
   */
  'dryRun'?: (boolean);
}

export interface SubmitJobsRequest__Output {
  'specs': (_fuxi_v1_JobSpec__Output)[];
  /**
   * Check, do not submit (Kubernetes' dryRun): every admission check a real submit of this batch
   * would run (spec, limits, quota group, testbed, job array owner and limit, an id a job and a job
   * array would share, an existing id), each job checked after the ones before it as if they had
   * been taken; nothing is written and no submit rate is charged. Each result is the verdict the
   * real submit would get now: `created` means the job would be created. A job without an id is
   * checked under one the master makes and answered with job_id ''.
   */
  'dryRun': (boolean);
}
